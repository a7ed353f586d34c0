"""Checked against figures nobody here computed.

Each test builds rows that reproduce a published figure, loads them into a real DuckDB database with the
project's tables and views (or calls the project's functions), and asserts the project returns the figure.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from tasks.selection.figures import load_figures
from tasks.report.format import pct, pct_with_fraction
from tasks.stats.wilson import clustered_wilson_interval, wilson_interval
from tasks.stats.paired import paired_comparison
from tasks.stats.planner import (
    half_width,
    requests_for_points,
    trials_for_half_width,
)
from tasks.stats.weighted import weighted_change
from tests.factories.rows import KnownRun, one, selection_row, tool_rows


def per_tool(con, tool: str, arm: str = "base") -> dict:
    return one(con, "SELECT * FROM per_tool_accuracy WHERE tool = ? AND arm = ?", [tool, arm])


# 24 requests behind one tool ------------------------------------------------------------------------


def test_23_of_24_is_95_8_percent_and_11_of_24_is_45_8_percent():
    con = KnownRun().add(tool_rows("refund_order", 24, [1] * 23 + [0])
                         + tool_rows("track_shipment", 24, [1] * 11 + [0] * 13)).finish()
    refund, track = per_tool(con, "refund_order"), per_tool(con, "track_shipment")
    assert (refund["correct"], refund["n"]) == (23, 24) and round(100 * refund["accuracy"], 1) == 95.8
    assert (track["correct"], track["n"]) == (11, 24) and round(100 * track["accuracy"], 1) == 45.8
    # the reader gets both: the percentage and the fraction on a small denominator
    assert pct_with_fraction(23, 24) == "95.8% (23/24)"
    assert pct_with_fraction(11, 24) == "45.8% (11/24)"


def test_a_single_run_interval_at_11_of_24_is_about_20_points():
    con = KnownRun().add(tool_rows("track_shipment", 24, [1] * 11 + [0] * 13)).finish()
    row = per_tool(con, "track_shipment")
    half = 100 * (row["ci_high"] - row["ci_low"]) / 2
    assert 17.5 <= half <= 21.0  # "about +-20 points"
    reference = wilson_interval(11, 24)  # statsmodels' Wilson interval
    assert row["ci_low"] == pytest.approx(reference.low, abs=1e-9)
    assert row["ci_high"] == pytest.approx(reference.high, abs=1e-9)


def test_three_seeds_72_trials_bring_it_to_about_12_points_when_seeds_disagree():
    # 24 requests x 3 seeds = 72 trials, 33 right (45.8%); how many seeds each request got right is spread
    # like independent trials would spread it (binomial(3, 0.458): 4, 10, 7 and 3 requests at 0..3 right)
    counts = [0] * 4 + [1] * 10 + [2] * 7 + [3] * 3
    con = KnownRun(seeds=3).add(tool_rows("track_shipment", 24, counts, seeds=3)).finish()
    row = per_tool(con, "track_shipment")
    assert (row["correct"], row["n"], row["n_requests"]) == (33, 72, 24)
    assert round(100 * row["accuracy"], 1) == 45.8
    half = 100 * (row["ci_high"] - row["ci_low"]) / 2
    assert 11.0 <= half <= 13.0  # "about +-12 with three seeds"
    # the plain Wilson interval on 72 independent trials, the published figure's premise, agrees
    assert 100 * wilson_interval(33, 72).half_width == pytest.approx(half, abs=1.5)
    # and the report's request-clustered interval (small-sample corrected: 24 requests) still says about 12
    python = clustered_wilson_interval(counts, [3] * 24)
    assert 11.0 <= 100 * python.half_width <= 13.0
    level = load_figures(con, "run1").level("base", "existing", "track_shipment")
    assert (level.ci_low, level.ci_high) == pytest.approx((python.low, python.high), abs=1e-12)


def test_three_seeds_that_always_agree_add_nothing_to_the_interval():
    counts = [3] * 11 + [0] * 13  # the same answer under every permutation (a deterministic router)
    con = KnownRun(seeds=3).add(tool_rows("track_shipment", 24, counts, seeds=3)).finish()
    row = per_tool(con, "track_shipment")
    assert row["n"] == 72 and row["n_effective"] == pytest.approx(24)
    single = wilson_interval(11, 24)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((single.low, single.high), abs=1e-9)


def test_a_50_point_drop_is_twelve_requests():
    assert requests_for_points(24, 50) == 12
    run = KnownRun(arms=["base", "cand"], comparisons=[("base", "cand")])
    run.add(tool_rows("refund_order", 24, [1] * 24, arm="base", rung=1))
    run.add(tool_rows("refund_order", 24, [1] * 12 + [0] * 12, arm="cand", rung=2))
    con = run.finish()
    change = one(con, "SELECT * FROM paired_tool_changes WHERE tool = 'refund_order'")
    assert change["change"] == pytest.approx(-0.5)
    assert (change["worse"], change["better"], change["n_requests"]) == (12, 0, 24)
    paired = paired_comparison([1] * 24, [1] * 24, [1] * 12 + [0] * 12, [1] * 24)
    assert (paired.worse, paired.better) == (12, 0)
    # the score test at 0 (one seed: Tango's), by hand: 12 of 24 discordant, all one way, a quarter-request
    # continuity correction: z = (12 - 0.25) / sqrt(12)
    z = (12 - 0.25) / math.sqrt(12)
    assert paired.p_value == pytest.approx(2 * (1 - NormalDist().cdf(z)))
    assert paired.change.high < 0


# A tool with 6% of the set and 31% of traffic ------------------------------------------------------


WEIGHTS = {"gift_cards": 0.31, "track_shipment": 0.30, "refund_order": 0.20, "lookup_order": 0.12,
           "reset_password": 0.07}


def _six_percent_run() -> KnownRun:
    # 200 requests: gift_cards holds 12 (6% of the set) and 31% of traffic; it drops 12/12 -> 6/12 (50 points)
    run = KnownRun(arms=["base", "cand"], comparisons=[("base", "cand")], weights=WEIGHTS)
    for arm, rung, gift in (("base", 1, [1] * 12), ("cand", 2, [1] * 6 + [0] * 6)):
        run.add(tool_rows("gift_cards", 12, gift, arm=arm, rung=rung))
        for tool in ("track_shipment", "refund_order", "lookup_order", "reset_password"):
            run.add(tool_rows(tool, 47, [1] * 40 + [0] * 7, arm=arm, rung=rung))
    return run


def test_six_percent_of_the_set_and_31_percent_of_traffic_dropping_50_points():
    figures = load_figures(_six_percent_run().finish(), "run1")
    change = figures.weighted_changes[("base", "cand")]
    assert 100 * change.unweighted.estimate == pytest.approx(-3.0)  # "about 3 points unweighted"
    assert 100 * change.weighted.estimate == pytest.approx(-15.5)  # "about 15.5 weighted"
    gift = next(c for c in change.contributions if c.tool == "gift_cards")
    assert (gift.set_share, gift.traffic_share, gift.change) == pytest.approx((0.06, 0.31, -0.5))
    assert 100 * gift.unweighted_contribution == pytest.approx(-3.0)
    assert 100 * gift.weighted_contribution == pytest.approx(-15.5)
    # both intervals hold the figure and are on the losing side
    assert change.weighted.low < -0.155 < change.weighted.high < 0
    assert change.unweighted.low < -0.03 < change.unweighted.high < 0


def test_the_contribution_function_alone_gives_the_same_figures():
    tools = ["x"] * 12 + ["y"] * 188
    before = [1] * 200
    after = [1] * 6 + [0] * 6 + [1] * 188
    change = weighted_change(tools, before, [1] * 200, after, [1] * 200, {"x": 0.31, "y": 0.69})
    assert round(100 * change.unweighted.estimate, 1) == -3.0
    assert round(100 * change.weighted.estimate, 1) == -15.5


# 540 requests x 3 seeds --------------------------------------------------------------------------


def test_540_requests_by_3_seeds_is_1620_rows_and_the_seed_spread_is_the_noise_floor():
    seeds = [0.884, 0.891, 0.906]
    assert round(100 * sum(seeds) / 3, 1) == 89.4 and round(100 * (max(seeds) - min(seeds)), 1) == 2.2
    # the nearest counts 540 requests can give (88.4% is not k/540 for a whole k): 477, 481, 489 right
    per_seed = {1: 477, 2: 481, 3: 489}
    rows = [selection_row(f"r{i:03d}", "track_shipment", i < per_seed[seed], seed=seed)
            for seed in (1, 2, 3) for i in range(540)]
    con = KnownRun(seeds=3).add(rows).finish()
    row = one(con, "SELECT * FROM aggregate_accuracy")
    assert (row["n"], row["n_requests"], row["n_seeds"]) == (1620, 540, 3)
    assert [round(100 * a, 1) for a in row["seed_accuracies"]] == [88.3, 89.1, 90.6]
    assert round(100 * row["seed_spread"], 1) == 2.2
    assert round(100 * row["accuracy"], 1) == 89.3  # = the mean of the three seeds (equal sizes)


# 44 of 50 tasks ---------------------------------------------------------------------------------


def test_44_of_50_is_88_percent_with_an_interval_of_about_76_to_95():
    con = KnownRun().add(tool_rows("task", 50, [1] * 44 + [0] * 6)).finish()
    row = per_tool(con, "task")
    assert round(100 * row["accuracy"]) == 88
    assert round(100 * row["ci_low"]) == 76 and round(100 * row["ci_high"]) in (94, 95)
    assert pct(row["ci_low"], 0) == "76%" and round(100 * row["ci_high"], 1) == pytest.approx(94.4, abs=0.1)


def test_about_200_tasks_bring_it_to_about_plus_minus_5():
    assert 4.0 <= 100 * half_width(0.88, 200) <= 5.5
    needed = trials_for_half_width(0.88, 0.05)
    assert 150 <= needed <= 200  # "roughly 200 tasks"
    # the width shrinks with the square root of the trials
    assert half_width(0.88, 50) / half_width(0.88, 150) == pytest.approx(1.7, abs=0.1)  # tripling: / ~1.7
    assert trials_for_half_width(0.5, 0.05) / trials_for_half_width(0.5, 0.10) == pytest.approx(4, abs=0.15)  # halving: x4


# 128 invalid calls out of 1,201 ------------------------------------------------------------------


def test_128_invalid_calls_out_of_1201_is_10_7_percent():
    rows = [selection_row(f"r{i:04d}", "track_shipment", True, outcome="invalid" if i < 128 else None)
            for i in range(1201)]
    con = KnownRun().add(rows).finish()
    row = one(con, "SELECT * FROM aggregate_accuracy")
    assert (row["invalid"], row["n"]) == (128, 1201)
    assert pct(row["invalid_rate"]) == "10.7%"
    assert pct_with_fraction(128, 1201) == "10.7%"  # a large denominator needs no fraction
    assert row["correct"] == 1201 - 128  # an invalid reply is never counted right
