"""`tooleval plan`'s text. The planner's drop, for the paired change interval: test_planner_power.py."""

from __future__ import annotations


import pytest

from tasks.stats.change_power import planned_drop
from tasks.stats.planner import plan


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
