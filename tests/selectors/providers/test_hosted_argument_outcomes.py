"""A hosted model's call of the right tool, through the real SDKs and the loopback server, scored per parameter
by the selection instrument's row scoring: an invented enum value, a missing required id and a hallucinated
parameter each counted where it belongs (the first two break the tool's schema: the row is 'invalid' for tool
accuracy, its arguments scored all the same)."""

from __future__ import annotations

import pytest

from schemas.expected_arguments import ExpectedArgument
from tasks.selection.plan_batch import PlannedRequest
from tasks.selection.row_scoring import score_row
from tasks.selectors.providers.chat_selector import ChatSelector
from tests.factories.catalogues import selection_input, support_tools
from tests.provider_server import tool_call
from tests.selectors.providers.conftest import MODELS, chat_options

TOOLS = support_tools("lookup_order", "track_shipment", "refund_order")
EXPECTED = {"order_id": ExpectedArgument.model_validate("NW-1234567"),
            "reason": ExpectedArgument.model_validate({"one_of": ["damaged", "faulty"]}),
            "note": ExpectedArgument.model_validate({"regex": "smashed", "may_be_omitted": True})}
RIGHT = {"order_id": "NW-1234567", "reason": "damaged"}


def planned() -> PlannedRequest:
    return PlannedRequest(
        request_id="r1", messages_json="[]", slice="existing", intent=None, label_status="adjudicated", tools=TOOLS,
        offered=frozenset(t.name for t in TOOLS), tool_set_id="s", expected="refund_order", label="refund_order",
        expected_position=3, cache_key="k", expected_arguments=EXPECTED)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("arguments, outcome, correct, wrong", [
    (RIGHT, "correct", True, {}),
    ({**RIGHT, "reason": "changed_my_mind"}, "invalid", False, {"reason": "wrong_value"}),
    ({"reason": "damaged"}, "invalid", False, {"order_id": "missing_required"}),
    ({**RIGHT, "refund_code": "X9"}, "correct", False, {"refund_code": "hallucinated"}),
    ({**RIGHT, "amount": 12.5}, "correct", True, {"amount": "extra_allowed"}),
])
def test_each_argument_fault_is_counted_where_it_belongs(serve, kind, arguments, outcome, correct, wrong):
    server = serve(lambda seen: tool_call("refund_order", arguments))
    selector = ChatSelector(kind, MODELS[kind], chat_options(server, kind))
    [selection] = selector.select([selection_input("my parcel NW-1234567 arrived smashed, refund please", TOOLS)])
    row = score_row(planned(), selection)
    assert (row["outcome"], row["arguments_correct"]) == (outcome, correct), (row["detail"], row["argument_outcomes"])
    found = {o["parameter"]: o["outcome"] for o in row["argument_outcomes"]}
    assert {p: o for p, o in found.items() if o != "right"} == wrong


def bfcl_replayed(serve, planned: list, call_of: dict) -> list[dict]:
    """BFCL requests answered by a hosted arm (openai SDK, loopback server) replaying ``call_of[id]`` as the
    expected function's call; each selection scored by the instrument's row scoring."""
    from tasks.selectors.base import SelectionInput
    from tasks.selectors.providers.tool_names import wire_name

    by_text = {(p.messages[-1].content.strip(), frozenset(wire_name(t.name) for t in p.tools)):
               (wire_name(p.expected), call_of[p.request_id]) for p in planned}
    assert len(by_text) == len(planned)  # a text and its functions name one record
    server = serve(lambda seen: tool_call(*by_text[seen.user_text.strip(), frozenset(seen.tools)]))
    selector = ChatSelector("openai", MODELS["openai"], chat_options(server, "openai"))
    selections = selector.select([SelectionInput(request_id=p.request_id, messages=p.messages, tools=p.tools,
                                                 prompt="Call the one function that fits.") for p in planned])
    return [score_row(p, selection) for p, selection in zip(planned, selections)]


def test_bfcl_multiple_replayed_through_a_hosted_arm(serve, tmp_path):
    """Each record's first acceptable answer: every call's arguments right; one mutation per record (cycling
    through each record's mutations): the category BFCL's checker gives it."""
    from tests.importers.test_bfcl_arguments import (
        ANSWERS, BFCL_TO_OURS, QUESTIONS, bfcl_verdict, first_answer, mutations, planned_requests, raw_records)

    if not QUESTIONS.is_file():
        pytest.skip("public bench data not found")
    planned = planned_requests(tmp_path)
    raw = raw_records()
    firsts = {i: first_answer(a, f["parameters"]["properties"]) for i, (f, a) in raw.items()}
    rows = bfcl_replayed(serve, planned, firsts)
    assert len(rows) == 200 and all(r["outcome"] == "correct" and r["arguments_correct"] for r in rows)
    mutated, expected = {}, {}
    for n, (request_id, (function, answer)) in enumerate(raw.items()):
        found = mutations(function, answer, firsts[request_id])
        _, mutated[request_id] = found[n % len(found)]
        expected[request_id] = BFCL_TO_OURS[bfcl_verdict(function, answer, mutated[request_id])]
    rows = bfcl_replayed(serve, planned, mutated)
    for p, row in zip(planned, rows):
        wrong = [o["outcome"] for o in row["argument_outcomes"] if o["outcome"] != "right"]
        assert wrong == ([] if expected[p.request_id] == "right" else [expected[p.request_id]]), (
            p.request_id, mutated[p.request_id], row["outcome"], row["argument_outcomes"])
    assert len(set(expected.values())) >= 5, expected
