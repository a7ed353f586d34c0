"""Every reading of a paired change is what the interval printed beside it says: the interval uses
every seed of every request, and the p-value beside it is the score test that interval inverts, so the two
never disagree, and no second test (a majority vote of seeds, the seed spread) can overrule them."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.report.format import p_value
from tasks.report.version_calibration import _paired_reading
from tasks.selection.figures import Change
from tasks.report.format import paired_reading
from benchmarks.simulations.coverage import PairedScenario
from tasks.stats.paired import paired_comparison


def _change(paired, spread: float = 0.0) -> Change:
    return Change("base", "arm", "existing", None, paired, spread, spread)


def test_nine_requests_worse_none_better_reads_as_a_drop_even_inside_the_seed_spread():
    # 60 requests x 3 seeds; 9 requests lose one of their three right seeds, none gains: no request changes
    # its majority verdict, so the retired majority-vote test saw nothing (p = 1) and widened the interval to 0
    n = 60
    paired = paired_comparison([3] * n, [3] * n, [2] * 9 + [3] * (n - 9), [3] * n)
    assert (paired.worse, paired.better) == (9, 0)
    assert paired.change.high < 0
    assert paired.p_value < 0.01
    # a seed spread of 6.7 points (larger than the 5-point change) does not turn it into "within noise"
    assert paired_reading(_change(paired, spread=0.067).paired) == "▼ drop"
    assert _paired_reading(paired) == "▼ on shared"


def test_a_change_whose_interval_holds_zero_could_be_chance_whatever_the_seeds_say():
    paired = paired_comparison([1] * 24, [1] * 24, [0] * 4 + [1] * 20, [1] * 24)
    assert paired.change.low < 0 < paired.change.high
    assert paired.p_value >= 0.05
    assert paired_reading(_change(paired).paired) == "could be chance"
    assert _paired_reading(paired) == "no change shown"


def test_nothing_moved_reads_as_no_request_changed():
    paired = paired_comparison([2] * 10, [3] * 10, [2] * 10, [3] * 10)
    assert paired.p_value == 1.0
    assert paired_reading(_change(paired).paired) == "no request changed"


@pytest.mark.parametrize("correlation,paired_seeds", [(0.0, False), (0.0, True), (0.5, False), (0.5, True),
                                                      (1.0, False)])
@pytest.mark.parametrize("n", [10, 40, 200])
def test_reading_p_value_and_interval_never_disagree_where_seeds_disagree(correlation, paired_seeds, n):
    scenario = PairedScenario("shift" if correlation < 1 else "one-way", n, 0.08, correlation,
                              paired_seeds=paired_seeds)
    rng = np.random.default_rng(42)
    shown = 0
    for _ in range(150):
        (ka, ma), (kb, mb), _truth = scenario.draw(rng)
        paired = paired_comparison(ka, ma, kb, mb)
        excludes = not paired.change.contains(0.0)
        words = paired_reading(_change(paired).paired)
        assert (words in ("▼ drop", "▲ gain")) == excludes
        assert (paired.p_value < 0.05) == excludes
        printed = p_value(paired.p_value)
        assert printed.startswith("<") or (float(printed) < 0.05) == excludes
        shown += excludes
    if n == 200:
        assert shown > 0  # the regime is not empty: some changes are read as changes


def test_a_p_value_just_under_the_level_never_prints_as_the_level():
    assert p_value(0.0496) == "0.0496"
    assert p_value(0.0504) == "0.05"
    assert p_value(0.031) == "0.031"


def test_an_interval_end_just_off_zero_prints_on_its_own_side():
    from tasks.report.format import change_span
    from tasks.stats.estimate import Interval

    # a drop whose CI ends 0.004 points below 0 (the position-sensitivity example's update_payment_method)
    assert change_span(Interval(-0.109, -0.25, -0.00004, "x")) == "-25.0 to -0.004"
    assert change_span(Interval(-0.1, -0.25, 0.0, "x")) == "-25.0 to 0.0"
    assert change_span(Interval(0.1, 0.00003, 0.2, "x")) == "+0.003 to +20.0"


def test_no_requests_is_never_a_change():
    paired = paired_comparison([], [], [], [])
    assert paired.p_value == 1.0 and not paired.significant
