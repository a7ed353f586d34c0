"""`tooleval plan`, and the power of the exact McNemar test (``mcnemar_power.py``, still used by the report's
resolution table). The planner's own drop, for the paired change interval: test_planner_power.py."""

from __future__ import annotations

import itertools
import math

import pytest

from tasks.stats.distributions import exact_mcnemar
from tasks.stats.mcnemar_power import detectable_drop, mcnemar_power
from tasks.stats.change_power import planned_drop
from tasks.stats.planner import plan


def brute_force_power(n: int, worse: float, better: float, alpha: float = 0.05) -> float:
    """Sum over every (worse count, better count) of n requests: the multinomial probability of the
    counts times whether the exact test rejects."""
    total = 0.0
    for w, b in itertools.product(range(n + 1), repeat=2):
        if w + b > n:
            continue
        probability = (math.comb(n, w) * math.comb(n - w, b) * worse**w * better**b
                       * (1 - worse - better) ** (n - w - b))
        total += probability * (exact_mcnemar(w, b) <= alpha)
    return total


@pytest.mark.parametrize("n,worse,better", [(10, 0.3, 0.0), (24, 0.155, 0.0), (24, 0.299, 0.03), (40, 0.15, 0.05)])
def test_power_is_the_brute_force_sum(n, worse, better):
    assert mcnemar_power(n, worse, better) == pytest.approx(brute_force_power(n, worse, better), abs=1e-9)


def test_the_issues_figures_at_24_requests():
    # at 100% accuracy a 15.5-point drop (what the unpaired formula called detectable) has 16% power
    assert mcnemar_power(24, 0.155, 0.0) == pytest.approx(0.16, abs=0.01)
    # at 97% a 26.9-point drop has 49-66% power depending on churn, not 80%
    assert 0.49 <= mcnemar_power(24, 0.269 + 0.03, 0.03) <= mcnemar_power(24, 0.269, 0.0) <= 0.66


@pytest.mark.parametrize("accuracy,requests,churn", [(0.9, 24, 0.0), (0.97, 24, 0.03), (0.9, 400, 0.0),
                                                     (0.9, 400, 0.05), (1.0, 100, 0.0)])
@pytest.mark.parametrize("power", [0.8, 0.9])
def test_the_detectable_drop_is_where_the_power_is_reached(accuracy, requests, churn, power):
    found = detectable_drop(accuracy, requests, power, churn=churn)
    assert mcnemar_power(requests, found.drop + found.churn, found.churn) >= power
    assert mcnemar_power(requests, found.drop - 0.002 + found.churn, found.churn) < power


def test_higher_power_needs_a_larger_drop():
    assert detectable_drop(0.9, 200, 0.9).drop > detectable_drop(0.9, 200, 0.8).drop


def test_plan_prints_the_interval_itself_seed_001_44_of_50():
    lines = plan(0.88, 50).lines()
    assert "95% interval: about 76.2% to 94.4%" in lines[1]  # '44 of 50: about 76% to 95%', asymmetric
    assert "-11.8 / +6.4 points" in lines[1]


def test_plan_honours_the_power_in_its_text():
    text = "\n".join(plan(0.9, 100, power=0.9).lines())
    assert "90% power" in text and "80% power" not in text
    assert f"{100 * planned_drop(0.9, 100, 1, 0.0, 0.9).drop:.1f} points" in text


def test_plan_says_none_detectable_when_none_is():
    text = "\n".join(plan(0.05, 24).lines())
    assert "none detectable" in text and "even a drop of all 5.0 points" in text


def test_plan_states_its_assumption_and_the_churn_case():
    text = "\n".join(plan(0.9, 400, seeds=3, icc=1.0).lines())
    assert "go wrong one way" in text and "the 95% paired change interval excludes 0" in text
    assert "5% of requests also turn wrong -> right" in text
    # at 100% accuracy nothing can turn wrong -> right: no churn line
    assert "turn wrong -> right" not in "\n".join(plan(1.0, 24, icc=1.0).lines())
