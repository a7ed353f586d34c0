"""The statistics functions on hand-checked cases, and the SQL views agreeing with them."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from tasks.stats.calibration import (
    brier_interval,
    coverage_curve,
    expected_calibration_error,
    find_threshold,
    reliability_bins,
    request_split,
    tercile_gap,
    tercile_order,
)
from tasks.stats.interaction import find_factorials, interaction_table
from tasks.stats.wilson import clustered_wilson_interval, wilson_interval
from tasks.stats.paired import paired_comparison
from tasks.stats.change_power import planned_drop
from tasks.stats.planner import effective_trials_planned, plan
from tasks.stats.wilson import cluster_sums, clustered_wilson_from_sums
from tests.factories.rows import KnownRun, one, selection_row


# intervals -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k,n", [(0, 10), (10, 10), (3, 7), (44, 50), (500, 1000)])
def test_wilson_is_statsmodels_wilson(k, n):
    low, high = proportion_confint(k, n, method="wilson")
    interval = wilson_interval(k, n)
    assert (interval.low, interval.high) == pytest.approx((low, high))


def test_one_seed_gives_exactly_wilson_and_the_cluster_interval_never_beats_the_rows():
    rng = np.random.default_rng(1)
    k = rng.integers(0, 2, 60)
    single = clustered_wilson_interval(k, np.ones(60))
    plain = wilson_interval(k.sum(), 60)
    assert (single.low, single.high) == pytest.approx((plain.low, plain.high))
    correlated = np.repeat(k, 1) * 3  # three seeds that always agree
    assert clustered_wilson_interval(correlated, np.full(60, 3)).n_effective == pytest.approx(60)


def test_independent_seeds_narrow_the_interval_towards_wilson_on_the_rows():
    rng = np.random.default_rng(7)
    k = rng.binomial(3, rng.beta(4, 2, 200))  # request accuracy varies, seeds independent given it
    m = np.full(200, 3)
    clustered = clustered_wilson_interval(k, m)
    on_requests = wilson_interval(k.sum() / 3, 200)
    on_rows = wilson_interval(k.sum(), 600)
    assert on_rows.half_width < clustered.half_width < on_requests.half_width
    assert 200 < clustered.n_effective < 600
    # the same rows always give the same interval (closed form, nothing resampled)
    again = clustered_wilson_interval(k, m)
    assert (again.low, again.high) == (clustered.low, clustered.high)


def test_a_few_requests_carrying_every_failure_get_a_wider_t():
    # 20 requests x 3 seeds, a single failed row: n_effective must not claim 60 independent rows
    k = [3] * 19 + [2]
    interval = clustered_wilson_interval(k, [3] * 20)
    assert interval.n_effective < 60 * 0.8
    assert interval.low < wilson_interval(59, 60).low
    # never wider than Wilson on the requests (the conservative bound), never narrower than on the rows
    assert interval.half_width <= wilson_interval(19 + 2 / 3, 20).half_width + 1e-12


def test_fewer_than_ten_requests_do_not_credit_seeds():
    k, m = [3, 2, 1, 3, 0, 3, 2, 3, 3], [3] * 9
    interval = clustered_wilson_interval(k, m)
    assert interval.n_effective == 9
    plain = wilson_interval(sum(k) / 3, 9)
    assert (interval.low, interval.high) == pytest.approx((plain.low, plain.high))


def test_the_views_interval_is_the_python_interval_on_random_rows():
    rng = np.random.default_rng(3)
    rows = []
    for i in range(40):
        p = rng.uniform(0.1, 0.9)
        for seed in (1, 2, 3):
            rows.append(selection_row(f"r{i:02d}", "t", bool(rng.random() < p), seed=seed))
    con = KnownRun(seeds=3).add(rows).finish()
    view = one(con, "SELECT * FROM aggregate_accuracy")
    k = [sum(r["correct"] for r in rows if r["request_id"] == f"r{i:02d}") for i in range(40)]
    python = clustered_wilson_interval(k, [3] * 40)
    assert (view["ci_low"], view["ci_high"], view["n_effective"]) == pytest.approx(
        (python.low, python.high, python.n_effective))


# paired comparisons ---------------------------------------------------------------------------------


def test_seeds_are_not_counted_as_extra_pairs():
    # 10 requests, three identical seeds each: 4 right -> wrong; counted once per request, not three times
    before = [3] * 10
    after = [0] * 4 + [3] * 6
    paired = paired_comparison(before, [3] * 10, after, [3] * 10)
    assert (paired.worse, paired.better, paired.n_requests) == (4, 0, 10)
    assert paired.change.n_effective == 10  # identical seeds: the requests, not the rows
    assert paired.change.estimate == pytest.approx(-0.4)
    assert paired.change.low < -0.4 < paired.change.high
    # identical seeds: the same interval as one seed per request
    single = paired_comparison([1] * 10, [1] * 10, [0] * 4 + [1] * 6, [1] * 10)
    assert (paired.change.low, paired.change.high) == pytest.approx((single.change.low, single.change.high))


def test_a_request_is_worse_when_it_is_right_on_fewer_of_its_seeds():
    paired = paired_comparison([2, 1, 3, 3], [3, 3, 3, 3], [1, 2, 3, 2], [3, 3, 3, 3])
    assert (paired.worse, paired.better, paired.both_right) == (2, 1, 1)


# planner -------------------------------------------------------------------------------------------


def test_the_planner_counts_seeds_only_as_far_as_they_disagree():
    assert effective_trials_planned(24, 3, icc=0.0) == 72
    assert effective_trials_planned(24, 3, icc=1.0) == 24
    assert plan(0.458, 24, seeds=3, icc=1.0).half_width == pytest.approx(plan(0.458, 24).half_width)
    assert plan(0.88, 50, target_half_width=0.05).requests_for_target == plan(0.88, 10, target_half_width=0.05).requests_for_target


def test_smaller_sets_only_see_larger_drops():
    drops = [planned_drop(0.9, n).drop for n in (24, 100, 400)]
    assert drops[0] > drops[1] > drops[2] > 0
    # churn (requests changing both ways) hides a drop: more is needed to see it
    assert planned_drop(0.9, 400, churn=0.05).drop > planned_drop(0.9, 400).drop
    # a set where no drop is possible enough to reach the power says so
    assert planned_drop(0.05, 24).drop is None


# calibration ----------------------------------------------------------------------------------------


def test_reliability_ece_and_brier_on_a_hand_checked_case():
    confidence = [0.95, 0.95, 0.95, 0.95, 0.35, 0.35]
    correct = [True, True, True, False, False, True]
    bins = reliability_bins(confidence, correct)
    assert bins[9].n == 4 and bins[9].accuracy == 0.75 and bins[3].n == 2 and bins[3].accuracy == 0.5
    # ECE = 4/6 * |0.75 - 0.95| + 2/6 * |0.5 - 0.35| = 0.1333 + 0.05
    assert expected_calibration_error(confidence, correct) == pytest.approx(4 / 6 * 0.2 + 2 / 6 * 0.15)
    assert brier_interval([1.0, 0.0, 0.5], [True, True, False], ["a", "b", "c"]).estimate == pytest.approx(
        (0 + 1 + 0.25) / 3)
    curve = coverage_curve(confidence, correct, [0.0, 0.5])
    assert (curve[1].coverage, curve[1].accuracy) == pytest.approx((4 / 6, 0.75))


def test_the_calibration_views_agree_with_the_functions():
    rng = np.random.default_rng(11)
    rows = []
    for i in range(90):
        c = float(rng.uniform(0.05, 1.0))
        rows.append(selection_row(f"r{i:02d}", "t", bool(rng.random() < c), confidence=c))
    con = KnownRun().add(rows).finish()
    summary = one(con, "SELECT * FROM calibration_summary")
    conf = [r["confidence"] for r in rows]
    right = [r["correct"] for r in rows]
    assert summary["ece"] == pytest.approx(expected_calibration_error(conf, right))
    assert summary["brier"] == pytest.approx(brier_interval(conf, right, [r["request_id"] for r in rows]).estimate)
    view = con.execute("SELECT tercile, correct, n FROM confidence_terciles ORDER BY tercile").fetchall()
    terciles = tercile_order(conf, [r["request_id"] for r in rows], [r["seed"] for r in rows])
    y = np.array(right)
    assert view == [(t, int(y[terciles == t].sum()), int((terciles == t).sum())) for t in (1, 2, 3)]
    gap = tercile_gap(conf, right, [r["request_id"] for r in rows])
    assert gap.estimate == pytest.approx(view[2][1] / view[2][2] - view[0][1] / view[0][2])


def test_the_threshold_is_fitted_on_one_half_of_the_requests_and_judged_on_the_other():
    rng = np.random.default_rng(5)
    ids = [f"q{i:03d}" for i in range(400)]
    confidence = rng.uniform(0, 1, 400)
    correct = rng.random(400) < confidence
    fit = find_threshold(confidence, correct, ids, target_accuracy=0.8)
    halves = {request_split(r) for r in ids}
    assert halves == {"fit", "confirm"}
    assert fit.threshold is not None and fit.fit_accuracy >= 0.8
    assert fit.fit_rows + fit.confirm_rows == 400
    # the confirm figure uses only confirm-half requests at the fitted threshold
    confirm = [(c, y) for r, c, y in zip(ids, confidence, correct) if request_split(r) == "confirm" and c >= fit.threshold]
    assert fit.confirm_accuracy.estimate == pytest.approx(np.mean([y for _, y in confirm]))
    assert request_split("q001") == request_split("q001")  # fixed by the id, every run


def test_no_threshold_when_no_cut_reaches_the_target():
    fit = find_threshold([0.9] * 20, [False] * 20, [f"r{i}" for i in range(20)], 0.9)
    assert fit.threshold is None and fit.confirm_accuracy is None and fit.confirmation is None


# interaction ----------------------------------------------------------------------------------------


def test_a_2x2_is_found_and_its_gap_is_measured_minus_additive():
    arms = [
        {"arm": "base", "catalogue_hash": "c0", "prompt_hash": "p0", "model_id": "m", "selector": "s", "taskset_version": "v"},
        {"arm": "prompt", "catalogue_hash": "c0", "prompt_hash": "p1", "model_id": "m", "selector": "s", "taskset_version": "v"},
        {"arm": "surface", "catalogue_hash": "c1", "prompt_hash": "p0", "model_id": "m", "selector": "s", "taskset_version": "v"},
        {"arm": "both", "catalogue_hash": "c1", "prompt_hash": "p1", "model_id": "m", "selector": "s", "taskset_version": "v"},
    ]
    (square,) = find_factorials(arms)
    assert (square.baseline, {square.first, square.second}, square.both) == ("base", {"prompt", "surface"}, "both")
    n = 100
    acc = {"base": 60, "prompt": 70, "surface": 65, "both": 90}  # additive: 60 + 10 + 5 = 75; gap +15
    correct = [[1] * acc[a] + [0] * (n - acc[a]) for a in ("base", "prompt", "surface", "both")]
    table = interaction_table(correct, [[1] * n] * 4)
    assert table.additive_prediction == pytest.approx(0.75) and table.gap.estimate == pytest.approx(0.15)
    assert table.gap.low <= 0.15 <= table.gap.high


def test_the_interval_from_group_by_sums_is_the_interval_from_requests():
    rng = np.random.default_rng(2)
    m = rng.integers(1, 4, 80).astype(float)
    k = np.array([rng.integers(0, x + 1) for x in m], float)
    direct = clustered_wilson_interval(k, m)
    p = k.sum() / m.sum()
    e = k - p * m
    sums = clustered_wilson_from_sums(k.sum(), m.sum(), (e**2).sum(), (e**4).sum(), len(m))
    assert (sums.low, sums.high, sums.n_effective) == pytest.approx((direct.low, direct.high, direct.n_effective))
    assert cluster_sums(k, m) == pytest.approx((k.sum(), m.sum(), (e**2).sum(), (e**4).sum()))
