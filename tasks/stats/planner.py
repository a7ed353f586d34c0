"""Sample-size planning: the interval a measurement will have, the requests a target width needs, and the
smallest drop the report's reading of a change detects.

Widths follow the square root of the number of trials: tripling the trials divides the width by about
1.7 (sqrt 3), halving the width needs four times the trials. Seeds are trials only insofar as they
disagree: with a correlation ``icc`` between a request's seeds, m seeds of n requests are worth
``n m / (1 + (m - 1) icc)`` independent trials (a deterministic router has icc = 1: seeds add nothing).

The detectable drop is for the reading the report gives a change: its 95% paired change interval
(``paired.paired_change_interval``) excludes 0. Its power (``change_power.py``) counts every seed: a
request's change is the change in the share of its seeds that are right, and ``icc`` (the correlation of
two seeds of one request, given its accuracy) says how much seeds add. Under the project's simulation
model: seeds that vary (icc < 1) see a *shift* (every request loses the same share of its accuracy, and
requests also change both ways by chance); a deterministic router (icc = 1) loses requests one way
(``churn`` adds requests changing both ways). Pure ``math``: ``tooleval plan`` imports no numpy, scipy or
statsmodels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tasks.stats.distributions import two_sided_quantile
from tasks.stats.estimate import CONFIDENCE, Interval
from tasks.stats.change_power import ALPHA, PlannedDrop, planned_drop
from tasks.stats.wilson import wilson_interval

CHURN_EXAMPLE = 0.05
"""Churn shown beside a deterministic router's one-way figure: 5% of requests turning wrong -> right."""
VARYING_EXAMPLE = 0.5
"""The icc shown beside a deterministic router's figure: seeds that vary (a model whose pick moves with the
tool order)."""


def effective_trials_planned(requests: int, seeds: int = 1, icc: float = 0.0) -> float:
    """Independent trials worth of ``requests`` x ``seeds`` rows when seeds correlate by ``icc`` (0..1)."""
    if not 0.0 <= icc <= 1.0:
        raise ValueError("icc is a correlation between 0 and 1")
    return requests * seeds / (1 + (seeds - 1) * icc)


def half_width(accuracy: float, trials: float, confidence: float = CONFIDENCE) -> float:
    """Half-width of the Wilson interval at ``accuracy`` with ``trials`` independent trials."""
    return wilson_interval(accuracy * trials, trials, confidence).half_width


def trials_for_half_width(accuracy: float, target_half_width: float, confidence: float = CONFIDENCE) -> int:
    """Smallest number of independent trials whose Wilson interval is no wider than +-target."""
    if not 0 < target_half_width < 0.5:
        raise ValueError("the target half-width is a fraction between 0 and 0.5 (0.05 = +-5 points)")
    z = two_sided_quantile(confidence)
    n = max(1, math.floor(z * z * accuracy * (1 - accuracy) / target_half_width**2))
    while half_width(accuracy, n, confidence) > target_half_width:
        n += 1
    while n > 1 and half_width(accuracy, n - 1, confidence) <= target_half_width:
        n -= 1
    return n


def requests_for_points(requests: int, points: float) -> float:
    """How many requests a change of ``points`` (percentage points) is: 50 points of 24 requests is 12."""
    return requests * points / 100


def points_per_request(requests: int) -> float:
    """What one request is worth in percentage points (24 requests: 4.2 points each)."""
    return 100 / requests


def _percent(probability: float) -> str:
    return f"{100 * probability:.0f}%" if probability >= 0.01 else f"{100 * probability:.2g}%"


def drop_text(found: PlannedDrop) -> str:
    """'12.9 points (6.4 of 50 requests)' or 'none detectable (...)'."""
    if found.drop is None:
        largest = found.largest_drop
        return (f"none detectable: even a drop of all {100 * largest:.1f} points "
                f"({requests_for_points(found.requests, 100 * largest):.1f} of {found.requests} requests) is "
                f"detected with only {_percent(found.power_at_largest)} power")
    return (f"{100 * found.drop:.1f} points "
            f"(= {requests_for_points(found.requests, 100 * found.drop):.1f} of {found.requests} requests)")


def kind_text(icc: float) -> str:
    """The change the detectable drop assumes, in words."""
    if icc >= 1.0:
        return "if right requests go wrong one way (a deterministic router: every seed the same)"
    return (f"if every request loses the same share of its accuracy (a shift; seeds correlated {icc:g}, so "
            f"requests also change both ways by chance)")


@dataclass(frozen=True)
class Plan:
    """What a planned measurement of one tool (or slice) can show."""

    accuracy: float
    requests: int
    seeds: int
    icc: float
    trials: float
    """Effective independent trials."""
    interval: Interval
    """The interval the measurement will have at this accuracy (Wilson on the effective trials)."""
    drop: PlannedDrop
    """Smallest drop the paired change interval detects (a shift; one-way at icc 1)."""
    drop_with_churn: PlannedDrop | None
    """icc 1: the same with CHURN_EXAMPLE of the requests turning wrong -> right (None when none can)."""
    drop_if_seeds_vary: PlannedDrop | None = None
    """icc 1: the drop if the model's pick varied from seed to seed instead (icc VARYING_EXAMPLE, a shift)."""
    requests_for_target: int | None = None
    target_half_width: float | None = None
    power: float = 0.8
    alpha: float = ALPHA

    @property
    def half_width(self) -> float:
        return self.interval.half_width

    def lines(self) -> list[str]:
        i = self.interval
        test = (f"the 95% paired change interval excludes 0, {self.requests} requests x {self.seeds} seed(s), "
                f"{100 * self.power:g}% power, {100 * self.alpha:g}% two-sided")
        out = [
            f"accuracy {100 * self.accuracy:.1f}% on {self.requests} requests x {self.seeds} seed(s) "
            f"(icc {self.icc:g}): {self.trials:.0f} effective trials",
            f"95% interval: about {100 * i.low:.1f}% to {100 * i.high:.1f}% "
            f"({100 * (i.low - i.estimate):+.1f} / {100 * (i.high - i.estimate):+.1f} points; Wilson on the "
            f"effective trials)",
            f"smallest drop detectable ({test}), {kind_text(self.icc)}: {drop_text(self.drop)}",
        ]
        if self.drop_with_churn is not None:
            out.append(f"  if {100 * self.drop_with_churn.churn:g}% of requests also turn wrong -> right (and as "
                       f"many more right -> wrong): {drop_text(self.drop_with_churn)}")
        if self.drop_if_seeds_vary is not None:
            out.append(f"  if the model's pick varies from seed to seed instead (icc {self.drop_if_seeds_vary.icc:g}, "
                       f"a shift): "
                       f"{drop_text(self.drop_if_seeds_vary)}")
        out.append(f"one request is {points_per_request(self.requests):.1f} points")
        if self.requests_for_target is not None and self.target_half_width is not None:
            out.append(f"for +-{100 * self.target_half_width:g} points: {self.requests_for_target} requests "
                       f"at {self.seeds} seed(s) (icc {self.icc:g})")
        return out


def plan(accuracy: float, requests: int, seeds: int = 1, icc: float = 0.0,
         target_half_width: float | None = None, power: float = 0.8, alpha: float = ALPHA) -> Plan:
    """Everything the planner prints for one tool or slice."""
    if requests <= 0:
        raise ValueError("requests must be at least 1")
    trials = effective_trials_planned(requests, seeds, icc)
    needed = None
    if target_half_width is not None:
        per_request = effective_trials_planned(1, seeds, icc)
        needed = math.ceil(trials_for_half_width(accuracy, target_half_width) / per_request)
    deterministic = icc >= 1.0
    churn = min(CHURN_EXAMPLE, 1.0 - accuracy)
    return Plan(accuracy=accuracy, requests=requests, seeds=seeds, icc=icc, trials=trials,
                interval=wilson_interval(accuracy * trials, trials),
                drop=planned_drop(accuracy, requests, seeds, icc, power, alpha),
                drop_with_churn=(planned_drop(accuracy, requests, seeds, icc, power, alpha, churn)
                                 if deterministic and 0 < churn < accuracy else None),
                drop_if_seeds_vary=(planned_drop(accuracy, requests, seeds, VARYING_EXAMPLE, power, alpha)
                                    if deterministic else None),
                requests_for_target=needed, target_half_width=target_half_width, power=power, alpha=alpha)
