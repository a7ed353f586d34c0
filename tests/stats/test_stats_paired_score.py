"""The paired score interval (Tango's, generalised to seeds) and MOVER, on hand-checked cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from tasks.stats.distributions import normal_quantile
from tasks.stats.estimate import Interval
from tasks.stats.mover import mover_difference, mover_sum
from tasks.stats.paired import paired_comparison
from tasks.stats.paired_score import _constrained_minus, paired_score_interval, tango_interval, tango_score
from tasks.stats.wilson import wilson_interval


@pytest.mark.parametrize("plus,minus,n,d", [(3, 5, 24, -0.2), (0, 4, 24, 0.1), (7, 1, 40, 0.05), (2, 2, 10, 0.3)])
def test_the_constrained_maximum_likelihood_is_the_numerical_one(plus, minus, n, d):
    def negative_log_likelihood(q):
        q_plus, q_minus = q + d, q
        rest = 1 - q_plus - q_minus
        return -(plus * math.log(q_plus) + minus * math.log(q_minus) + (n - plus - minus) * math.log(rest))

    low = max(0.0, -d) + 1e-12
    high = (1 - d) / 2 - 1e-12
    numeric = optimize.minimize_scalar(negative_log_likelihood, bounds=(low, high), method="bounded",
                                       options={"xatol": 1e-12}).x
    assert _constrained_minus(plus, minus, n, d) == pytest.approx(numeric, abs=1e-6)


def test_tango_bounds_solve_the_score_equation():
    z = normal_quantile(0.975)
    low, high = tango_interval(3, 9, 40, correction=0.0)
    assert tango_score(3, 9, 40, low) == pytest.approx(z, abs=1e-9)
    assert tango_score(3, 9, 40, high) == pytest.approx(-z, abs=1e-9)


def test_refund_order_4_worse_0_better_holds_0_and_its_p_value_says_the_same():
    paired = paired_comparison([1] * 24, [1] * 24, [1] * 20 + [0] * 4, [1] * 24)
    assert (paired.worse, paired.better) == (4, 0)
    assert paired.change.estimate == pytest.approx(-4 / 24)
    assert paired.change.low < -0.3 and paired.change.high > 0.0  # not pinned at 0: the score interval's own end
    assert paired.p_value >= 0.05  # the score test the interval inverts


@pytest.mark.parametrize("n", [10, 24, 40])
def test_no_split_of_discordant_requests_gives_an_interval_that_contradicts_its_p_value(n):
    for worse in range(n + 1):
        for better in range(n + 1 - worse):
            before = [1] * worse + [0] * better + [1] * (n - worse - better)
            after = [0] * worse + [1] * better + [1] * (n - worse - better)
            paired = paired_comparison(before, [1] * n, after, [1] * n)
            holds_zero = paired.change.low <= 0 <= paired.change.high
            assert (paired.p_value >= 0.05) == holds_zero, (worse, better)


def test_nothing_changed_still_leaves_the_width_the_requests_allow():
    paired = paired_comparison([1] * 24, [1] * 24, [1] * 24, [1] * 24)
    assert paired.change.estimate == 0
    assert -paired.change.low == pytest.approx(paired.change.high)
    assert 0.12 < paired.change.high < 0.16  # about +-14 points


def test_all_changes_one_way_on_12_of_24_excludes_0():
    paired = paired_comparison([1] * 24, [1] * 24, [1] * 12 + [0] * 12, [1] * 24)
    assert paired.p_value < 0.001 and paired.change.high < -0.2 and paired.change.low > -0.75


def test_seeds_that_disagree_count_for_more_than_one_trial_but_never_more_than_their_rows():
    # 40 requests; each of 12 loses one of its three seeds, the rest stay: a real but partial drop
    before = [3] * 40
    after = [2] * 12 + [3] * 28
    paired = paired_comparison(before, [3] * 40, after, [3] * 40)
    assert paired.change.estimate == pytest.approx(-0.1)
    as_requests = paired_score_interval([-1.0] * 4 + [0.0] * 36)  # the same drop as whole requests flipping
    assert paired.change.high - paired.change.low < as_requests.high - as_requests.low
    assert paired.change.n_effective <= 3 * 40


def test_the_position_contrast_is_a_paired_binary_difference():
    interval = paired_score_interval([1, -1, -1, 0, 0, 0, -1, 0, 0, 0])
    low, high = tango_interval(1, 3, 10)
    assert (interval.low, interval.high) == pytest.approx((low, high))


def test_mover_reproduces_newcombes_hybrid_score_interval():
    # Newcombe (1998), 'Interval estimation for the difference between independent proportions', method 10:
    # 56/70 - 48/80 = 0.2000, 95% CI 0.0524 to 0.3339
    difference = mover_difference(wilson_interval(56, 70), wilson_interval(48, 80))
    assert (round(difference.estimate, 4), round(difference.low, 4), round(difference.high, 4)) == (0.2, 0.0524, 0.3339)


def test_mover_of_one_part_is_that_part_and_weights_scale_it():
    part = Interval(0.3, 0.1, 0.4, "x")
    assert mover_sum([part], [1.0]) == Interval(0.3, 0.1, 0.4, "MOVER")
    half = mover_sum([part, Interval(0.0, 0.0, 0.0, "x")], [0.5, 0.5])
    assert (half.estimate, half.low, half.high) == pytest.approx((0.15, 0.05, 0.2))


def test_the_interval_never_leaves_minus_one_to_one():
    rng = np.random.default_rng(4)
    for _ in range(50):
        d = rng.choice([-1.0, 0.0, 1.0], size=rng.integers(1, 30))
        interval = paired_score_interval(d)
        assert -1.0 <= interval.low <= interval.estimate <= interval.high <= 1.0


def test_the_bounds_are_plain_halvings_bounds_with_fewer_evaluations(monkeypatch):
    """The root finder (regula falsi, Illinois) gives the bounds 44 halvings of the range gave, in fewer
    evaluations of the score, on counts from none changed to all changed and fractional masses."""
    import tasks.stats.paired_score as module

    def by_halving(plus, minus, n, confidence=0.95):
        z = normal_quantile(1 - (1 - confidence) / 2)
        estimate = (plus - minus) / n

        def solve(low, high, target):
            for _ in range(44):
                middle = (low + high) / 2
                if tango_score(plus, minus, n, middle, module.CORRECTION) > target:
                    low = middle
                else:
                    high = middle
            return (low + high) / 2

        score = lambda d: tango_score(plus, minus, n, d, module.CORRECTION)  # noqa: E731
        lower = -1.0 if score(-1.0 + 1e-12) <= z else solve(-1.0 + 1e-12, estimate, z)
        upper = 1.0 if score(1.0 - 1e-12) >= -z else solve(estimate, 1.0 - 1e-12, -z)
        return min(lower, estimate), max(upper, estimate)

    calls = []
    real = module.tango_score
    monkeypatch.setattr(module, "tango_score", lambda *a, **k: calls.append(1) or real(*a, **k))
    cases = [(0, 0, 24), (12, 0, 24), (0, 12, 24), (4, 0, 10), (30, 12, 540), (1.5, 0.25, 3.0), (7.3, 2.1, 540.0),
             (200, 190, 20000), (1, 0, 1), (0, 1, 1), (500, 0, 540)]
    for plus, minus, n in cases:
        calls.clear()
        low, high = tango_interval(plus, minus, n)
        assert len(calls) < 2 * 44, (plus, minus, n, len(calls))
        expected = by_halving(plus, minus, n)
        assert low == pytest.approx(expected[0], abs=1e-12) and high == pytest.approx(expected[1], abs=1e-12)
