"""The argument gates on known rows whose seeds disagree: argument_drop reads the paired change's printed
interval under each rule (a drop only where the interval lies beyond the margin, within noise where it covers 0),
hallucinated_parameter_share reads a parameter's share of its tool's scored calls; both are NOT JUDGED where no
row's arguments were scored, never PASS."""

from __future__ import annotations

import re
from functools import partial

import pytest
from pydantic import ValidationError

from schemas.selection.criteria import SelectionCriteria
from tasks.report.judge import judge as judge_with
from tasks.selection.figures import load_figures
from tasks.selection.gates import JUDGES
from tasks.stats.paired import paired_comparison
from tests.factories.rows import KnownRun, selection_row, tool_rows

judge = partial(judge_with, judges=JUDGES)

BASE = [3, 3, 3, 3, 3, 2, 3, 3, 2, 3, 3, 3]
"""Of 3 seeds, how many of a request's calls sent right arguments in the baseline (12 refund requests)."""
DROP = [3, 1, 0, 3, 2, 2, 3, 0, 3, 1, 3, 2]
"""The candidate: 6 requests worse, 1 better, seeds disagreeing within requests."""
NOISE = [3, 3, 2, 3, 3, 3, 3, 3, 3, 2, 3, 3]
"""The candidate: 2 requests worse, 2 better, the same right calls: a change whose interval covers 0."""


def scored(request_id: str, seed: int, right: bool, arm: str, rung: int, extra: str | None = None):
    outcomes = [{"parameter": "order_id", "outcome": "right" if right else "wrong_value"}]
    if extra:
        outcomes.append({"parameter": extra, "outcome": "hallucinated"})
    return selection_row(request_id, "refund", True, seed=seed, arm=arm, rung=rung, slice_="existing",
                         arguments_correct=right and not extra, argument_outcomes=outcomes)


def run_of(candidate: list[int], candidate_scored: bool = True, extra_in: int = 0):
    """base -> cand on 12 refund requests x 3 seeds; the candidate's first ``extra_in`` requests also send a
    parameter 'code' the schema lacks under every seed."""
    run = KnownRun(arms=["base", "cand"], comparisons=[("base", "cand")], seeds=3)
    run.add([scored(f"q{i}", s, s <= k, "base", 1) for i, k in enumerate(BASE) for s in (1, 2, 3)])
    if candidate_scored:
        run.add([scored(f"q{i}", s, s <= k, "cand", 2, "code" if i < extra_in else None)
                 for i, k in enumerate(candidate) for s in (1, 2, 3)])
    else:  # an offline router: the right tool, no arguments
        run.add([selection_row(f"q{i}", "refund", True, seed=s, arm="cand", rung=2) for i in range(12)
                 for s in (1, 2, 3)])
    return load_figures(run.finish(), "run1")


def criteria(*gates: dict) -> SelectionCriteria:
    return SelectionCriteria.model_validate({"name": "t", "gates": list(gates)})


ARGS = {"name": "arguments-hold", "kind": "argument_drop", "max_drop_points": 10}
HALLUCINATED = {"name": "no-invented-parameters", "kind": "hallucinated_parameter_share", "max_share": 0.1}


def printed_interval(line: str) -> tuple[float, float, float]:
    found = re.search(r"= ([-+]?[\d.]+) pts \(95% CI ([-+]?[\d.]+) to ([-+]?[\d.]+)\)", line)
    assert found, line
    return tuple(float(x) for x in found.groups())


def test_a_paired_argument_drop_fails_with_the_interval_the_independent_computation_gives():
    figures = run_of(DROP)
    verdict = judge(figures, criteria(ARGS))
    (gate,) = verdict.gates
    assert verdict.status == "FAIL" and gate.status == "FAIL"
    (line,) = gate.evidence
    expected = paired_comparison(BASE, [3] * 12, DROP, [3] * 12)
    estimate, low, high = printed_interval(line)
    assert (estimate, low, high) == (round(100 * expected.change.estimate, 1), round(100 * expected.change.low, 1),
                                     round(100 * expected.change.high, 1))
    assert line.startswith("refund arguments (existing) base -> cand: 94.4% (34/36) -> 63.9% (23/36)")
    assert "6 requests worse, 1 better of 12" in line and "seed spread" in line


@pytest.mark.parametrize("candidate", [DROP, NOISE])
@pytest.mark.parametrize("rule", ["point", "confident", "demonstrated"])
def test_the_verdict_follows_from_the_printed_interval(candidate, rule):
    gate = judge(run_of(candidate), criteria({**ARGS, "rule": rule})).gates[0]
    line = gate.evidence[0].removeprefix("closest: ")
    estimate, low, high = printed_interval(line)
    read = {"point": estimate, "confident": high, "demonstrated": low}[rule]
    assert gate.status == ("FAIL" if read < -10 else "PASS")


def test_a_change_within_noise_has_an_interval_that_covers_zero():
    figures = run_of(NOISE)
    (change,) = figures.arguments.changes
    assert change.paired.change.estimate == 0 and change.paired.change.low < 0 < change.paired.change.high
    assert (change.paired.worse, change.paired.better) == (2, 2) and change.noise_floor > 0
    assert judge(figures, criteria(ARGS)).status == "PASS"


def test_without_scored_arguments_the_gates_are_not_judged_never_passed():
    run = KnownRun(arms=["base", "cand"], comparisons=[("base", "cand")])
    for arm, rung in (("base", 1), ("cand", 2)):
        run.add(tool_rows("refund", 10, [1] * 10, arm=arm, rung=rung))
    figures = load_figures(run.finish(), "run1")
    verdict = judge(figures, criteria(ARGS, HALLUCINATED))
    assert verdict.status == "NOT JUDGED"
    assert [g.status for g in verdict.gates] == ["NOT JUDGED", "NOT JUDGED"]
    assert "no row's arguments were scored" in verdict.gates[0].evidence[0]


def test_a_candidate_that_sends_no_arguments_is_not_judged_by_name():
    figures = run_of(DROP, candidate_scored=False)
    drop, hallucinated = judge(figures, criteria(ARGS, HALLUCINATED)).gates
    assert drop.status == "NOT JUDGED" and drop.not_judged == {
        "base -> cand": "no request scored in both arms for refund (existing)"}
    assert hallucinated.status == "NOT JUDGED" and hallucinated.not_judged == {
        "cand": "no row's arguments were scored in this arm"}


def test_a_hallucinated_parameter_beyond_its_share_fails_and_none_passes_with_its_interval():
    gate = judge(run_of(BASE, extra_in=3), criteria(HALLUCINATED)).gates[0]
    assert gate.status == "FAIL"
    assert gate.evidence[0].startswith("refund.code in cand (existing): sent in 25.0% (9/36) of scored calls (95% CI")
    passing = judge(run_of(BASE), criteria(HALLUCINATED)).gates[0]
    assert passing.status == "PASS"
    assert passing.evidence[0].startswith("closest: refund in cand (existing): no hallucinated parameter in 36 "
                                          "scored calls (95% CI 0.0")
    # demonstrated: 0 of 12 requests still leaves an upper bound above 10%
    strict = judge(run_of(BASE), criteria({**HALLUCINATED, "rule": "demonstrated"})).gates[0]
    assert strict.status == "FAIL"


def test_the_argument_gates_are_checked_as_written():
    parsed = criteria({**ARGS, "min_volume_share": 0.03, "slices": ["existing"]}, {**HALLUCINATED, "arms": "all"})
    assert [g.kind for g in parsed.gates] == ["argument_drop", "hallucinated_parameter_share"]
    with pytest.raises(ValidationError):
        criteria({**HALLUCINATED, "max_share": 1.5})
    with pytest.raises(ValidationError):
        criteria({**ARGS, "max_drop_points": 0})


def test_a_volume_share_needs_production_weights_and_leaves_small_tools_out():
    gate = judge(run_of(DROP), criteria({**ARGS, "min_volume_share": 0.03})).gates[0]
    assert gate.status == "NOT JUDGED" and "no production weights" in gate.evidence[0]
    run = KnownRun(arms=["base", "cand"], comparisons=[("base", "cand")], seeds=3, weights={"refund": 0.02})
    run.add([scored(f"q{i}", s, s <= k, "base", 1) for i, k in enumerate(BASE) for s in (1, 2, 3)])
    run.add([scored(f"q{i}", s, s <= k, "cand", 2) for i, k in enumerate(DROP) for s in (1, 2, 3)])
    figures = load_figures(run.finish(), "run1")
    assert judge(figures, criteria({**ARGS, "min_volume_share": 0.03})).gates[0].status == "SKIP"
    assert judge(figures, criteria({**ARGS, "min_volume_share": 0.01})).gates[0].status == "FAIL"
