"""The per-tool argument views on known rows: per_tool_argument_accuracy (scored rows only, NOT JUDGED where none
was scored, the interval per_tool_accuracy gives the same per-request counts), paired_argument_requests and
paired_argument_changes (requests scored in both arms, one-sided ones counted apart, relabelled ones left out),
hallucinated_parameter_share (the interval tasks/stats gives the per-request counts)."""

from __future__ import annotations

import pytest

from tasks.selection.argument_figures import load_argument_figures
from tasks.stats.paired import paired_comparison
from tasks.stats.wilson import clustered_wilson_interval
from tests.factories.rows import KnownRun, records, selection_row


def scored(request_id: str, seed: int, right: bool, *, arm: str = "base", rung: int = 1, tool: str = "refund",
           extra: str | None = None, **fields):
    outcomes = [{"parameter": "order_id", "outcome": "right" if right else "wrong_value"}]
    if extra:
        outcomes.append({"parameter": extra, "outcome": "hallucinated"})
    return selection_row(request_id, tool, True, seed=seed, arm=arm, rung=rung, slice_="s1",
                         arguments_correct=right and not extra, argument_outcomes=outcomes, **fields)


RIGHT = [3, 3, 3, 2, 3, 0, 3, 1, 3, 3, 2, 3]
"""Of 3 seeds, how many sent right arguments, for 12 requests whose tool was right under every seed."""


def test_per_tool_argument_accuracy_scores_only_scored_rows_and_leaves_the_unscored_tool_not_judged():
    run = KnownRun(seeds=3)
    run.add([scored(f"q{i}", seed, seed <= k) for i, k in enumerate(RIGHT) for seed in (1, 2, 3)])
    run.add([selection_row("q-free", "refund", True, seed=s, slice_="s1") for s in (1, 2, 3)])  # none expected
    run.add([selection_row("q-wrong", "refund", False, seed=s, slice_="s1") for s in (1, 2, 3)])  # other tool
    run.add([selection_row("t1", "track", True, seed=s, slice_="s1") for s in (1, 2, 3)])
    # the same per-request counts as tool accuracy, in another slice
    run.add([selection_row(f"q{i}", "refund", seed <= k, seed=seed, slice_="s2") for i, k in enumerate(RIGHT)
             for seed in (1, 2, 3)])
    con = run.finish()
    by_tool = {(r["slice"], r["tool"]): r for r in records(con, "select * from per_tool_argument_accuracy")}
    refund = by_tool[("s1", "refund")]
    assert (refund["n"], refund["scored"], refund["not_scored"], refund["n_requests"]) == (42, 36, 6, 12)
    assert refund["arguments_right"] == sum(RIGHT) and refund["tool_right_arguments_wrong"] == 36 - sum(RIGHT)
    assert refund["accuracy"] == pytest.approx(sum(RIGHT) / 36)
    # seed s: requests with k >= s right; seed 1: 11 of 12, seed 3: 8 of 12
    assert (refund["seed_min"], refund["seed_max"]) == pytest.approx((8 / 12, 11 / 12))
    [tool] = records(con, "select * from per_tool_accuracy where slice = 's2'")
    assert (refund["ci_low"], refund["ci_high"], refund["n_effective"]) == pytest.approx(
        (tool["ci_low"], tool["ci_high"], tool["n_effective"]))
    track = by_tool[("s1", "track")]  # nothing scored: no accuracy, never 0%
    assert (track["scored"], track["not_scored"], track["accuracy"], track["ci_low"]) == (0, 3, None, None)
    levels = {(x.slice, x.tool): x for x in load_argument_figures(con, "run1").tools}
    assert levels[("s1", "track")].accuracy is None
    assert levels[("s1", "refund")].accuracy.low == pytest.approx(refund["ci_low"])
    assert levels[("s1", "refund")].seed_spread == pytest.approx(3 / 12)


def paired_run() -> KnownRun:
    """base -> cand on 12 refund requests x 3 seeds whose seeds disagree: right arguments per request as
    BASE and CAND give; q-one scored in base only (cand chose another tool), q-moved relabelled in cand."""
    run = KnownRun(arms=["base", "cand"], comparisons=[("base", "cand")], seeds=3)
    for arm, rung, right in (("base", 1, BASE), ("cand", 2, CAND)):
        run.add([scored(f"q{i}", seed, seed <= k, arm=arm, rung=rung) for i, k in enumerate(right)
                 for seed in (1, 2, 3)])
    run.add([scored("q-one", s, True) for s in (1, 2, 3)])
    run.add([selection_row("q-one", "refund", False, seed=s, arm="cand", rung=2, slice_="s1") for s in (1, 2, 3)])
    run.add([scored("q-moved", s, True) for s in (1, 2, 3)])
    run.add([scored("q-moved", s, False, arm="cand", rung=2, label="track") for s in (1, 2, 3)])
    return run


BASE = [3, 3, 3, 3, 3, 2, 3, 3, 2, 3, 3, 3]
CAND = [3, 1, 0, 3, 2, 2, 3, 0, 3, 1, 3, 2]


def test_paired_argument_changes_pair_requests_scored_in_both_arms():
    con = paired_run().finish()
    requests = {r["request_id"]: r for r in records(con, "select * from paired_argument_requests")}
    assert "q-moved" not in requests  # relabelled: compares nothing
    assert (requests["q-one"]["paired"], requests["q-one"]["scored_arm"]) == (False, 0)
    [change] = records(con, "select * from paired_argument_changes")
    assert (change["n_requests"], change["one_side"], change["scored_baseline"], change["scored_arm"]) == (12, 1, 36, 36)
    assert (change["right_baseline"], change["right_arm"]) == (sum(BASE), sum(CAND))
    assert change["change"] == pytest.approx((sum(CAND) - sum(BASE)) / 36)
    worse = sum(c < b for b, c in zip(BASE, CAND))
    better = sum(c > b for b, c in zip(BASE, CAND))
    assert (change["worse"], change["better"]) == (worse, better) == (6, 1)
    # the interval: the paired score test on the same per-request counts
    [figure] = load_argument_figures(con, "run1").changes
    expected = paired_comparison(BASE, [3] * 12, CAND, [3] * 12)
    assert figure.one_side == 1 and figure.paired.change == expected.change
    assert figure.paired.change.high < 0  # a drop the interval shows, seeds disagreeing within requests


def test_hallucinated_parameter_share_with_the_request_clustered_interval():
    halluc = [2, 0, 1, 0, 0, 3, 0, 0, 0, 1, 0, 0]  # of 3 seeds, how many sent 'code'
    run = KnownRun(seeds=3)
    run.add([scored(f"q{i}", seed, True, extra="code" if seed <= k else None) for i, k in enumerate(halluc)
             for seed in (1, 2, 3)])
    run.add([scored("q0", 4, True, extra="note")])
    con = run.finish()
    found = {r["parameter"]: r for r in records(con, "select * from hallucinated_parameter_share")}
    code = found["code"]
    assert (code["hallucinated"], code["scored"], code["n_requests"]) == (7, 37, 12)
    expected = clustered_wilson_interval([2 + 0, 0, 1, 0, 0, 3, 0, 0, 0, 1, 0, 0], [4] + [3] * 11)
    assert (code["share"], code["ci_low"], code["ci_high"]) == pytest.approx(
        (expected.estimate, expected.low, expected.high))
    assert (found["note"]["hallucinated"], found["note"]["scored"]) == (1, 37)
