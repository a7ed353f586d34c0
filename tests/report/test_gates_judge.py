"""Each gate on known rows: PASS and FAIL with the evidence that decided them, under each decision rule."""

from __future__ import annotations

from functools import partial

import pytest

from flows.cli import EXIT_GATE_FAILED, EXIT_NOT_JUDGED, EXIT_OK, verdict_exit_code
from schemas.selection.criteria import SelectionCriteria
from tasks.selection.figures import load_figures
from tasks.report.judge import beyond, no_criteria, not_judged
from tasks.stats.estimate import Interval
from tests.factories.rows import KnownRun, selection_row, tool_rows
from tasks.report.judge import judge as judge_with  # noqa: E402
from tasks.selection.gates import JUDGES  # noqa: E402

judge = partial(judge_with, judges=JUDGES)

WEIGHTS = {"gift_cards": 0.31, "track_shipment": 0.30, "refund_order": 0.20, "lookup_order": 0.12,
           "reset_password": 0.02, "tiny": 0.05}


def ladder(gift_after: list[int], tiny_after: list[int] | None = None, confidence: bool = False):
    """Two arms on the same requests: gift_cards (31% of traffic) moves as given; tiny_after likewise."""
    run = KnownRun(arms=["base", "cand"], comparisons=[("base", "cand")], weights=WEIGHTS)
    for arm, rung, gift, tiny in (("base", 1, [1] * 12, [1] * 10), ("cand", 2, gift_after, tiny_after or [1] * 10)):
        run.add(tool_rows("gift_cards", 12, gift, arm=arm, rung=rung))
        run.add(tool_rows("tiny", 10, tiny, arm=arm, rung=rung))
        for tool in ("track_shipment", "refund_order", "lookup_order"):
            run.add(tool_rows(tool, 40, [1] * 34 + [0] * 6, arm=arm, rung=rung))
    if confidence:
        for r in run.rows:
            r["confidence"] = 0.9 if r["correct"] else 0.3
    return load_figures(run.finish(), "run1")


def criteria(*gates: dict) -> SelectionCriteria:
    return SelectionCriteria.model_validate({"name": "t", "gates": list(gates)})


DROP = {"name": "busy-tools-hold", "kind": "tool_drop", "min_volume_share": 0.03, "max_drop_points": 10}


def test_a_50_point_drop_of_a_busy_tool_fails_with_its_evidence():
    verdict = judge(ladder([1] * 6 + [0] * 6), criteria(DROP))
    (gate,) = verdict.gates
    assert verdict.status == "FAIL" and gate.status == "FAIL" and verdict_exit_code(verdict) == EXIT_GATE_FAILED
    (line,) = gate.evidence
    assert "gift_cards" in line and "31.0% of traffic" in line and "-50.0 pts" in line
    assert "6 requests worse, 0 better of 12" in line and "score test p=0.019" in line and "95% CI" in line


def test_a_small_tool_below_the_volume_share_is_not_held_to_the_margin():
    figures = ladder([1] * 12, tiny_after=[0] * 10)  # tiny: 5% of traffic
    assert judge(figures, criteria({**DROP, "min_volume_share": 0.06})).status == "PASS"
    assert judge(figures, criteria(DROP)).status == "FAIL"


def test_a_pass_shows_the_closest_case():
    verdict = judge(ladder([1] * 11 + [0]), criteria(DROP))  # -8.3 points: inside the 10-point margin
    (gate,) = verdict.gates
    assert gate.status == "PASS" and gate.evidence[0].startswith("closest: gift_cards")
    assert verdict_exit_code(verdict) == EXIT_OK


@pytest.mark.parametrize("rule,expected", [("point", "FAIL"), ("confident", "PASS"), ("demonstrated", "FAIL")])
def test_the_decision_rule_reads_the_interval(rule, expected):
    # -16.7 points on 12 requests: beyond the margin, but the interval reaches back over it
    verdict = judge(ladder([1] * 10 + [0] * 2), criteria({**DROP, "rule": rule}))
    assert verdict.gates[0].status == expected


def test_beyond_under_each_rule():
    x = Interval(0.5, 0.4, 0.6, "t")
    assert beyond(x, 0.55, True, "point") and not beyond(x, 0.55, True, "confident")
    assert beyond(x, 0.45, True, "demonstrated") and not beyond(x, 0.45, True, "point")
    assert beyond(x, 0.45, False, "point") and not beyond(x, 0.45, False, "confident")


def test_weighted_gates_floors_pairs_and_failures():
    figures = ladder([0] * 12)  # gift_cards -> other_tool: 12 of the candidate's 30 failed rows
    verdict = judge(figures, criteria(
        {"name": "w-drop", "kind": "weighted_drop", "max_drop_points": 3},
        {"name": "w-floor", "kind": "weighted_floor", "min_accuracy": 0.5, "arms": "final"},
        {"name": "floors", "kind": "slice_floor", "floors": {"existing": 0.95}, "arms": "all"},
        {"name": "pairs", "kind": "confused_pair_share", "max_share": 0.25},
        {"name": "clean", "kind": "failure_rate", "max_rate": 0.02},
    ))
    status = {g.name: g.status for g in verdict.gates}
    assert status == {"w-drop": "FAIL", "w-floor": "PASS", "floors": "FAIL", "pairs": "FAIL", "clean": "PASS"}
    w_drop = next(g for g in verdict.gates if g.name == "w-drop")
    assert "largest parts: gift_cards" in w_drop.evidence[0]
    floors = next(g for g in verdict.gates if g.name == "floors")
    assert floors.n_checked == 2 and floors.n_failed == 2  # base and cand, judged apart


def test_the_confidence_gap_is_skipped_without_a_confidence_and_judged_with_one():
    gate = {"name": "router", "kind": "confidence_gap", "min_gap_points": 20}
    skipped = judge(ladder([1] * 12), criteria(gate))
    assert skipped.gates[0].status == "SKIP" and skipped.status == "NOT JUDGED"  # no gate applied: not a pass
    judged = judge(ladder([1] * 6 + [0] * 6, confidence=True), criteria(gate))
    assert judged.gates[0].status == "PASS" and "gap +" in judged.gates[0].evidence[0]


def test_without_production_weights_a_volume_gate_is_not_judged():
    run = KnownRun(arms=["base", "cand"], comparisons=[("base", "cand")])
    run.add(tool_rows("t", 10, [1] * 10, arm="base")).add(tool_rows("t", 10, [0] * 10, arm="cand", rung=2))
    verdict = judge(load_figures(run.finish(), "run1"), criteria(DROP))
    assert verdict.status == "NOT JUDGED" and verdict_exit_code(verdict) == EXIT_NOT_JUDGED


def test_failure_rows_fail_the_failure_gate():
    rows = [selection_row(f"r{i}", "t", True, outcome="invalid" if i < 3 else None) for i in range(50)]
    verdict = judge(load_figures(KnownRun().add(rows).finish(), "run1"),
                    criteria({"name": "clean", "kind": "failure_rate", "max_rate": 0.02}))
    assert verdict.status == "FAIL" and "6.0% (3/50)" in verdict.gates[0].evidence[0]


def test_exit_codes():
    assert verdict_exit_code(no_criteria("r")) == EXIT_OK
    assert verdict_exit_code(not_judged("r", "changed")) == EXIT_NOT_JUDGED
    assert verdict_exit_code(None) == EXIT_OK
