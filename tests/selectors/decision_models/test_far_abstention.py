"""The rise of 'none' far from the examples (``far_abstention.py``): what it adds to a request's 'none' utility,
and the slope training chooses from held-out utilities. Constructed utilities, no MiniLM."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.selectors.decision_models import far_abstention
from tasks.selectors.decision_models.far_abstention import (
    MAX_SLOPE,
    far_boost,
    fit_base_and_slope,
    fit_far_slope,
    fit_none_base,
    no_none_nll_budget,
    typical_tool_cosine,
)


def test_the_rise_grows_with_both_gaps_and_is_zero_near_the_examples_or_a_fitting_tool():
    nearest = np.array([0.9, 0.4, 0.35, 0.2, 0.2, np.nan])
    best = np.array([0.1, 0.1, 0.1, 0.1, 0.5, 0.1])
    assert far_boost(nearest, best, 0.4, 0.3, 100.0) == pytest.approx([0.0, 0.0, 1.0, 4.0, 0.0, 0.0])
    assert not far_boost(nearest, best, None, 0.3, 100.0).any()  # a file without a cut-off
    assert not far_boost(nearest, best, 0.4, None, 100.0).any()
    assert not far_boost(nearest, best, 0.4, 0.3, None).any() and not far_boost(nearest, best, 0.4, 0.3, 0.0).any()


def test_the_tool_cosine_is_the_median_of_the_answerable_requests():
    best = np.array([0.1, 0.2, 0.3, 0.9, 0.05])
    assert typical_tool_cosine(best, np.array([True, True, True, False, False])) == pytest.approx(0.2)
    assert typical_tool_cosine(best, np.zeros(5, dtype=bool)) is None


def held_out(far_kind: str, n: int = 400, seed: int = 3) -> tuple[np.ndarray, ...]:
    """Held-out utilities of three tools and 'none', and the best tool's cosine: near requests (nearest
    0.5-0.9, a tool at 0.5) answered right with a margin of 2 over 'none'; 5% far ones (nearest 0.3, no tool
    above 0.1) labelled 'none' but scored as tool 0 by 1, and 5% far answerable ones (as far, as unlike the
    tools), "right", "wrong" (another tool by 2), or "absent" (near like the rest)."""
    rng = np.random.default_rng(seed)
    u = np.zeros((n, 4))
    labels = rng.integers(0, 3, n)
    u[np.arange(n), labels] = 2.0
    nearest = rng.uniform(0.5, 0.9, n)
    far_none, far_answerable = np.arange(20), np.arange(20, 40)
    best = np.full(n, 0.5)
    nearest[far_none], best[far_none] = 0.3, 0.1
    if far_kind != "absent":
        nearest[far_answerable], best[far_answerable] = 0.3, 0.1
    labels[far_none] = 3
    u[far_none] = [1.0, 0.0, 0.0, 0.0]
    if far_kind == "wrong":
        u[far_answerable] = 0.0
        u[far_answerable, (labels[far_answerable] + 1) % 3] = 2.0
    return u, nearest, best, labels, np.ones(n, dtype=bool)


def test_the_steepest_slope_is_chosen_when_every_far_request_is_none():
    u, nearest, best, labels, rows = held_out("absent")
    assert fit_far_slope(u, nearest, best, labels, rows, 0.4, 0.4) == MAX_SLOPE


def log_loss(u: np.ndarray, labels: np.ndarray) -> float:
    p = np.exp(u - u.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return float(-np.log(p[np.arange(len(u)), labels]).mean())


def test_the_slope_stops_where_far_answerable_requests_would_be_too_sure_of_none():
    u, nearest, best, labels, rows = held_out("wrong")  # wrong anyway: only the log-loss budget holds the slope
    slope = fit_far_slope(u, nearest, best, labels, rows, 0.4, 0.4)
    assert 0 < slope < MAX_SLOPE
    losses = {}
    for s in (0.0, slope, slope * 1.01):
        boosted = u.copy()
        boosted[:, -1] += far_boost(nearest, best, 0.4, 0.4, s)
        losses[s] = log_loss(boosted, labels)
    assert losses[slope] <= losses[0.0] + far_abstention.FAR_NLL_BUDGET < losses[slope * 1.01]
    # a little noise in the utilities moves the slope a little, never to another grid value
    noisy = u + np.random.default_rng(0).normal(0.0, 1e-7, u.shape)
    assert fit_far_slope(noisy, nearest, best, labels, rows, 0.4, 0.4) == pytest.approx(slope, rel=1e-4)


def test_the_slope_stops_where_it_would_cost_answerable_accuracy():
    u, nearest, best, labels, rows = held_out("right")
    slope = fit_far_slope(u, nearest, best, labels, rows, 0.4, 0.4)
    # a far answerable request loses to 'none' once slope x 0.1 x 0.3 > 2: up to slope 66.7 keeps them (5%
    # of the requests, over the one-point budget)
    assert 0 < slope <= 2 / 0.03 + 1e-6
    boosted = u.copy()
    boosted[:, -1] += far_boost(nearest, best, 0.4, 0.4, slope)
    answerable = labels != 3
    before = (u.argmax(axis=1) == labels)[answerable].mean()
    after = (boosted.argmax(axis=1) == labels)[answerable].mean()
    assert after >= before - far_abstention.FAR_BUDGET


def test_no_rise_without_a_learned_none_or_a_cutoff():
    u, nearest, best, labels, rows = held_out("absent")
    assert fit_far_slope(u, nearest, best, labels, rows, None, 0.4) == 0.0
    no_none = u.copy()
    no_none[:, -1] = -np.inf
    answerable_only = np.where(labels == 3, 0, labels)
    assert fit_far_slope(no_none, nearest, best, answerable_only, rows, 0.4, 0.4) == 0.0


def test_a_model_without_none_gets_the_base_where_none_has_the_rule_of_succession_s_mean_probability():
    rng = np.random.default_rng(5)
    u = np.c_[rng.normal(0.0, 2.0, (300, 4)), np.full(300, -np.inf)]
    u[:20, 3] = -np.inf  # requests offered three tools
    rows = np.ones(300, dtype=bool)
    rows[-10:] = False
    base = fit_none_base(u, rows)
    tools = u[rows, :-1]
    p_none = np.exp(base) / (np.exp(base) + np.exp(tools).sum(axis=1))
    assert p_none.mean() == pytest.approx(1 / (290 + 2), rel=1e-6)
    assert fit_none_base(u, np.zeros(300, dtype=bool)) is None
    assert fit_none_base(np.full((3, 3), -np.inf), np.ones(3, dtype=bool)) is None  # no tool offered


def test_a_model_without_none_rises_from_its_base_and_the_base_s_cost_counts():
    u, nearest, best, labels, rows = held_out("absent")
    answerable = labels != 3
    no_none = u[answerable].copy()
    no_none[:, -1] = -np.inf
    args = (nearest[answerable], best[answerable], labels[answerable], rows[answerable], 0.4, 0.4)
    assert fit_far_slope(no_none, *args) == 0.0  # nothing to rise
    base = fit_none_base(no_none, rows[answerable])
    assert fit_far_slope(no_none, *args, none_base=base) == MAX_SLOPE  # far answerable ones ("absent"): none
    # a base above every right tool's utility (2) costs all the accuracy on its own: no rise
    assert fit_far_slope(no_none, *args, none_base=2.5) == 0.0


def test_a_model_without_none_keeps_the_base_and_slope_that_abstain_on_the_most_far_requests_within_budget():
    u, nearest, best, labels, rows = held_out("wrong")
    # four far answerable requests, wrong anyway: abstaining there costs log-loss only, within the budget
    answerable = (labels != 3) & ((np.arange(len(labels)) < 20) | (np.arange(len(labels)) >= 36))
    no_none = u[answerable].copy()
    no_none[:, -1] = -np.inf
    args = (nearest[answerable], best[answerable], labels[answerable], rows[answerable], 0.4, 0.4)
    base, slope = fit_base_and_slope(no_none, *args)
    assert base >= fit_none_base(no_none, rows[answerable]) and slope > 0
    budget = no_none_nll_budget(no_none, rows[answerable])
    assert fit_far_slope(no_none, *args, none_base=base, nll_budget=budget) == slope
    boosted = no_none.copy()
    boosted[:, -1] = base + far_boost(args[0], args[1], 0.4, 0.4, slope)
    picks_none = boosted.argmax(axis=1) == 3
    far = args[0] < 0.4
    assert picks_none[far].mean() >= 0.5 and not picks_none[~far].any()
    assert log_loss(boosted, args[2]) <= log_loss(no_none, args[2]) + budget
    # the lowest base tried, with its own steepest slope, abstains on no more far requests
    lowest = fit_none_base(no_none, rows[answerable])
    at_lowest = no_none.copy()
    at_lowest[:, -1] = lowest + far_boost(args[0], args[1], 0.4, 0.4,
                                          fit_far_slope(no_none, *args, none_base=lowest, nll_budget=budget))
    assert (at_lowest.argmax(axis=1) == 3)[far].sum() <= picks_none[far].sum()
    assert base == pytest.approx(lowest)  # all four abstain from the lowest base on: the lowest among equals
    assert fit_base_and_slope(no_none, *args[:4], None, 0.4) == (None, 0.0)


def test_a_model_without_none_has_the_log_loss_of_its_accuracy_budget_given_up_to_a_uniform_guess():
    u = np.c_[np.zeros((4, 40)), np.full(4, -np.inf)]
    u[:2, 30:] = -np.inf  # two requests offered 30 tools (and 'none': 31 options), two offered 40 (41)
    rows = np.array([True, True, True, False])
    expected = far_abstention.FAR_BUDGET * (2 * np.log(31) + np.log(41)) / 3
    assert no_none_nll_budget(u, rows) == pytest.approx(expected)
    # a few options: never less than a model's that learned 'none'
    assert no_none_nll_budget(u[:, 26:], rows) == far_abstention.FAR_NLL_BUDGET


def test_a_model_without_none_may_spend_more_log_loss_than_one_that_learned_none():
    """Four far answerable requests that the model gets wrong anyway: abstaining on them costs no accuracy,
    only log-loss; the model without 'none' lets 'none' rise as far as its own budget, beyond the budget of
    a model that learned 'none'."""
    u, nearest, best, labels, rows = held_out("wrong")
    answerable = (labels != 3) & ((np.arange(len(labels)) < 20) | (np.arange(len(labels)) >= 36))
    # a catalogue of 23 tools, the 20 added far below the three that count
    no_none = np.c_[u[answerable, :-1], np.full((int(answerable.sum()), 20), -30.0), u[answerable, -1:]]
    no_none[:, -1] = -np.inf
    args = (nearest[answerable], best[answerable], labels[answerable], rows[answerable], 0.4, 0.4)
    budget = no_none_nll_budget(no_none, rows[answerable])
    assert budget > far_abstention.FAR_NLL_BUDGET  # 24 options: 0.01 x log 24
    base = fit_none_base(no_none, rows[answerable])
    tight = fit_far_slope(no_none, *args, none_base=base)
    loose = fit_far_slope(no_none, *args, none_base=base, nll_budget=budget)
    assert 0 < tight < loose

    def loss(slope: float) -> float:
        boosted = no_none.copy()
        boosted[:, -1] = base + far_boost(args[0], args[1], 0.4, 0.4, slope)
        return log_loss(boosted, args[2]) - log_loss(no_none, args[2])

    assert loss(tight) <= far_abstention.FAR_NLL_BUDGET < loss(loose) <= budget
