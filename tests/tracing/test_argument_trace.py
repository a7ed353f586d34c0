"""The argument check in the traces: a judged hosted arm (openai SDK, loopback provider server) whose calls of
the right tool carry right arguments, an invented enum value, a missing required id and a hallucinated
parameter, traced through the trace process and the OTLP export to a recording collector. Every request with
expected arguments gets an ``argument_check`` CODE annotation on its chat model's span, beside the judge's
verdict there, its label and per-parameter outcomes the row's; a request without expected arguments gets none."""

from __future__ import annotations

import pytest

from schemas.catalogue import Catalogue
from schemas.expected_arguments import ExpectedArgument
from schemas.taskset import LabelledRequest, Message
from tasks.core_records import RunContext
from tasks.selection.arms import SelectionArm
from tasks.selection.plan_batch import plan_arm_seed
from tasks.selection.select_batch import select_and_land
from tasks.tracing.trace_ids import LLM, TraceIds
from tests.factories.catalogues import support_tools
from tests.provider_server import ProviderServer, Reply, Seen, text_reply, tool_call
from tests.tracing.recording_collector import RecordingCollector
from tests.tracing.test_trace_process import _wait_for

FAKE_KEY = "sk-tooleval-FAKE-argument-trace-0f3b"
MODEL = "gpt-4.1-mini-2025-04-14"
TOOLS = support_tools("lookup_order", "track_shipment", "refund_order")
EXPECTED = {"order_id": ExpectedArgument.model_validate("NW-1234567"),
            "reason": ExpectedArgument.model_validate({"one_of": ["damaged", "faulty"]}),
            "note": ExpectedArgument.model_validate({"regex": "smash(ed)?", "may_be_omitted": True})}
RIGHT = {"order_id": "NW-1234567", "reason": "damaged"}
CALLS = {  # request text -> (the call the model makes, the argument check's label, its explanation)
    "refund NW-1234567, it came smashed": (
        ("refund_order", RIGHT), "right", "order_id: right; reason: right"),
    "refund NW-1234567, I changed my mind": (
        ("refund_order", {**RIGHT, "reason": "changed_my_mind"}), "wrong", "order_id: right; reason: wrong_value"),
    "refund my smashed parcel please": (
        ("refund_order", {"reason": "damaged"}), "wrong", "reason: right; order_id: missing_required"),
    "refund NW-1234567 smashed, code X9": (
        ("refund_order", {**RIGHT, "refund_code": "X9"}), "wrong",
        "order_id: right; reason: right; refund_code: hallucinated"),
    "where is my refund for NW-1234567": (
        ("lookup_order", {"order_id": "NW-1234567"}), "not_scored",
        "not scored: chose lookup_order, expected refund_order"),
}
FREE = "refund order NW-7654321 please"  # no expected arguments: no argument check


def script(seen: Seen) -> Reply:
    if seen.system.startswith("You grade"):
        return text_reply("right")
    if seen.user_text == FREE:
        return tool_call("refund_order", {"order_id": "NW-7654321", "reason": "other"})
    return tool_call(*CALLS[seen.user_text][0])


def unit(server: ProviderServer):
    requests = [LabelledRequest(id=f"r{i}", messages=(Message(role="user", content=text),), expected="refund_order",
                                slice="existing", expected_arguments=EXPECTED) for i, text in enumerate(CALLS)]
    requests.append(LabelledRequest(id="free", messages=(Message(role="user", content=FREE),),
                                    expected="refund_order", slice="existing"))
    judge = {"model": MODEL, "selector": "openai", "base_url": server.openai_url, "votes": 3}
    arm = SelectionArm(name="judged", rung=1, catalogue_name="c", catalogue=Catalogue(name="c", tools=TOOLS),
                       prompt_name="default", prompt_text="Pick a tool.", model_id=MODEL, selector="openai",
                       version="v1", options={"base_url": server.openai_url, "timeout_s": 5.0, "judge": judge})
    [planned] = plan_arm_seed(arm, 1, tuple(requests), "shop", batch_size=len(requests))
    return planned


def traced_run(otlp: str, tmp_path, project: str = "tooleval") -> tuple[int, list[str]]:
    """The judged unit selected, landed and traced to ``otlp``: its number of rows, the judge's prompts."""
    from tasks.tracing.trace_sender import finish_tracing
    from tasks.tracing.trace_target import parse_trace_target

    with ProviderServer(script, api_key=FAKE_KEY) as server:
        target = parse_trace_target(otlp, project)
        result = select_and_land(unit(server), RunContext("run-args", "exp", tmp_path / "rows", None,
                                                          tmp_path / "ledger.sqlite", trace=target))
        assert finish_tracing(target) == []
        judged = [s.user_text for s in server.requests() if s.system.startswith("You grade")]
    return result.n_rows, judged


def test_each_argument_check_reaches_the_chat_models_span_beside_the_judge(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with RecordingCollector() as collector:
        n_rows, judge_prompts = traced_run(collector.otlp, tmp_path)
        assert n_rows == 6
        _wait_for(collector, 2 * 6, 6 + 6 + 5)  # root + chat span per row; label check, judge, argument check
    notes = {(a["span_id"], a["name"]): a for a in collector.annotations}
    assert len(notes) == len(collector.annotations) == 6 + 6 + 5
    for i, (_, label, explanation) in enumerate(CALLS.values()):
        span = TraceIds.of("run-args", "judged", 1, f"r{i}").span_hex(LLM)
        check = notes[(span, "argument_check")]
        assert check["annotator_kind"] == "CODE"
        assert (check["result"]["label"], check["result"]["explanation"]) == (label, explanation)
        assert check["result"].get("score") == {"right": 1.0, "wrong": 0.0}.get(label)
        outcomes = check["metadata"]["outcomes"]
        assert outcomes == ({} if label == "not_scored" else
                            dict(part.split(": ") for part in explanation.split("; ")))
        assert notes[(span, "judge")]["result"]["label"] == "right"  # the judge's verdict on the same span
    free = TraceIds.of("run-args", "judged", 1, "free").span_hex(LLM)
    assert (free, "argument_check") not in notes and (free, "judge") in notes
    assert {s.name for s in collector.spans} == {"select_tool", "chat_completion"}
    assert FAKE_KEY not in repr(collector.annotations)
    # the judge stays blind: it reads the call (its arguments) but never the labels or the expected arguments
    assert len(judge_prompts) == 6 * 3 and all("refund_order with arguments" in p or "lookup_order with" in p
                                               for p in judge_prompts)
    assert not any("smash(ed)?" in p or "one_of" in p or "may_be_omitted" in p for p in judge_prompts)


@pytest.mark.parametrize("changes, reason", [
    ({"chosen": None, "outcome": "empty"}, "not scored: no usable answer (empty)"),
    ({"chosen": "refund_order", "outcome": "invalid", "arguments": "refund it"},
     "not scored: the call's arguments are not a JSON object"),
    ({"chosen": "refund_order", "outcome": "correct"}, "not scored: no arguments were sent (the selector gives none)"),
])
def test_an_argument_check_not_scored_says_why(changes, reason):
    from tasks.selection.selection_trace import selection_annotations

    row = {"run_id": "run", "arm": "a", "seed": 1, "request_id": "r1", "expected": "refund_order",
           "correct": False, "router_pick": None, "decided_by": None, "judge_verdict": None,
           "arguments_correct": None, "argument_outcomes": None, **changes}
    [check] = [a for a in selection_annotations(row, ("root", LLM), True) if a["name"] == "argument_check"]
    assert check["result"] == {"label": "not_scored", "explanation": reason}
    assert [a["name"] for a in selection_annotations(row, ("root", LLM), False)] == ["label_check"]
    assert [a["name"] for a in selection_annotations(row, ("decision",), True)] == ["label_check"]  # offline


@pytest.mark.slow  # a real Phoenix server
def test_phoenix_finds_the_choices_that_held_with_calls_that_did_not(tmp_path, monkeypatch):
    """The filter docs/routing/phoenix.md gives: judge right and argument check wrong, on one span."""
    from phoenix.client.types.spans import SpanQuery

    from tests.tracing.phoenix_server import PhoenixServer
    from tests.tracing.test_phoenix_traces import _read_back

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with PhoenixServer(tmp_path / "phoenix") as phoenix:
        assert traced_run(phoenix.otlp, tmp_path, "tooleval-arguments")[0] == 6
        client, spans, annotations = _read_back(phoenix, 2 * 6, 6 + 6 + 5, "tooleval-arguments")
        assert len(spans) == 12 and len(annotations) == 17
        found = client.spans.get_spans_dataframe(
            query=SpanQuery().where("annotations['judge'].label == 'right' and "
                                    "annotations['argument_check'].label == 'wrong'"),
            project_identifier="tooleval-arguments", limit=100_000)
    wrong = {TraceIds.of("run-args", "judged", 1, f"r{i}").span_hex(LLM)
             for i, (_, label, _) in enumerate(CALLS.values()) if label == "wrong"}
    assert len(wrong) == 3 and set(found.index) == wrong
