"""The argument gates on a hosted arm's real calls (openai SDK, loopback server): the candidate invents a
parameter (refund_code) or sends another order id under some seeds of some requests, the baseline never;
each call scored by the selection instrument's row scoring, landed, read by the views and judged. The
paired change and the hallucinated parameter's share equal tasks/stats' figures on the hand-counted faults."""

from __future__ import annotations

from functools import partial

import pytest

from schemas.expected_arguments import ExpectedArgument
from schemas.selection.criteria import SelectionCriteria
from tasks.report.judge import judge as judge_with
from tasks.selection.figures import load_figures
from tasks.selection.gates import JUDGES
from tasks.selection.plan_batch import PlannedRequest
from tasks.selection.row_scoring import score_row
from tasks.selectors.providers.chat_selector import ChatSelector
from tasks.stats.paired import paired_comparison
from tasks.stats.wilson import clustered_wilson_interval
from tests.factories.catalogues import selection_input, support_tools
from tests.factories.rows import KnownRun, selection_row
from tests.provider_server import tool_call
from tests.selectors.providers.conftest import MODELS, chat_options

TOOLS = support_tools("lookup_order", "track_shipment", "refund_order")
N = 12
INVENTED = {0: {1, 2, 3}, 2: {1}, 5: {2, 3}, 9: {3}}
"""Request -> the seeds under which the candidate also sends refund_code (not in refund_order's schema)."""
OTHER_ID = {3: {2}, 5: {1}, 7: {1, 3}}
"""Request -> the seeds under which the candidate sends another order id."""


def order_id(i: int) -> str:
    return f"NW-12345{i:02d}"


def planned(i: int) -> PlannedRequest:
    expected = {"order_id": ExpectedArgument.model_validate(order_id(i)),
                "reason": ExpectedArgument.model_validate({"one_of": ["damaged", "faulty"]})}
    return PlannedRequest(
        request_id=f"r{i}", messages_json="[]", slice="existing", intent=None, label_status="adjudicated",
        tools=TOOLS, offered=frozenset(t.name for t in TOOLS), tool_set_id="s", expected="refund_order",
        label="refund_order", expected_position=3, cache_key=f"k{i}", expected_arguments=expected)


def text(i: int) -> str:
    return f"my parcel {order_id(i)} arrived smashed, refund please"


def arm_rows(serve, arm: str, rung: int, faulty: bool) -> list[dict]:
    state = {"seed": 0}

    def script(seen):
        i = next(i for i in range(N) if text(i) == seen.user_text.strip())
        arguments = {"order_id": order_id(i), "reason": "damaged"}
        if faulty and state["seed"] in OTHER_ID.get(i, ()):
            arguments["order_id"] = order_id(i + 50)
        if faulty and state["seed"] in INVENTED.get(i, ()):
            arguments["refund_code"] = "X9"
        return tool_call("refund_order", arguments)

    server = serve(script)
    selector = ChatSelector("openai", MODELS["openai"], chat_options(server, "openai"))
    rows = []
    for seed in (1, 2, 3):
        state["seed"] = seed
        selections = selector.select([selection_input(text(i), TOOLS, request_id=f"r{i}") for i in range(N)])
        for i, selection in enumerate(selections):
            scored = score_row(planned(i), selection)
            rows.append(selection_row(f"r{i}", "refund_order", arm=arm, rung=rung, seed=seed,
                                      chosen=scored.pop("chosen"), outcome=scored.pop("outcome"), **scored))
    return rows


def test_the_argument_gates_judge_a_hosted_candidates_real_calls(serve):
    run = KnownRun(arms=["base", "cand"], comparisons=[("base", "cand")], seeds=3)
    run.add(arm_rows(serve, "base", 1, faulty=False)).add(arm_rows(serve, "cand", 2, faulty=True))
    figures = load_figures(run.finish(), "run1")
    assert all(r["outcome"] == "correct" for r in run.rows)  # the tool is right on every call: only arguments move
    wrong = [len(INVENTED.get(i, set()) | OTHER_ID.get(i, set())) for i in range(N)]
    expected = paired_comparison([3] * N, [3] * N, [3 - w for w in wrong], [3] * N)
    (change,) = figures.arguments.changes
    got = change.paired
    assert (got.worse, got.better, got.correct_from, got.correct_to) == (expected.worse, expected.better, 36, 25)
    assert (got.change.estimate, got.change.low, got.change.high, got.p_value) == pytest.approx(
        (expected.change.estimate, expected.change.low, expected.change.high, expected.p_value))
    invented = [len(INVENTED.get(i, ())) for i in range(N)]
    (share,) = figures.arguments.hallucinations
    assert (share.arm, share.tool, share.parameter, share.hallucinated) == ("cand", "refund_order", "refund_code", 7)
    independent = clustered_wilson_interval(invented, [3] * N)
    assert (share.share.estimate, share.share.low, share.share.high) == pytest.approx(
        (independent.estimate, independent.low, independent.high))
    verdict = partial(judge_with, judges=JUDGES)(figures, SelectionCriteria.model_validate({"name": "t", "gates": [
        {"name": "arguments-hold", "kind": "argument_drop", "max_drop_points": 10},
        {"name": "no-invented-parameters", "kind": "hallucinated_parameter_share", "max_share": 0.05}]}))
    drop, hallucinated = verdict.gates
    assert drop.status == "FAIL" and "refund_order arguments (existing) base -> cand: 100.0% (36/36) -> 69.4% (25/36)" \
        in drop.evidence[0]
    assert hallucinated.status == "FAIL" and hallucinated.evidence == [
        "refund_order.refund_code in cand (existing): sent in 19.4% (7/36) of scored calls (95% CI 6.1–47.2)"]
