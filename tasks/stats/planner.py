"""Sample-size planning: how wide an interval is, how many requests a target width needs, and the
smallest drop a comparison can detect.

Widths follow the square root of the number of trials: tripling the trials divides the width by about
1.7 (sqrt 3), halving the width needs four times the trials. Seeds are trials only insofar as they
disagree: with an intra-request correlation ``icc`` between seeds, m seeds of n requests are worth
``n m / (1 + (m - 1) icc)`` independent trials (a deterministic router has icc = 1: seeds add nothing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from statsmodels.stats.power import NormalIndPower

from tasks.stats.intervals import CONFIDENCE, wilson_interval, z_value


def effective_trials_planned(requests: int, seeds: int = 1, icc: float = 0.0) -> float:
    """Independent trials worth of ``requests`` x ``seeds`` rows when seeds correlate by ``icc`` (0..1)."""
    if not 0.0 <= icc <= 1.0:
        raise ValueError("icc is a correlation between 0 and 1")
    return requests * seeds / (1 + (seeds - 1) * icc)


def half_width(accuracy: float, trials: float, confidence: float = CONFIDENCE) -> float:
    """Half-width of the Wilson interval at ``accuracy`` with ``trials`` independent trials."""
    interval = wilson_interval(accuracy * trials, trials, confidence)
    return interval.half_width


def trials_for_half_width(accuracy: float, target_half_width: float, confidence: float = CONFIDENCE) -> int:
    """Smallest number of independent trials whose Wilson interval is no wider than +-target."""
    if not 0 < target_half_width < 0.5:
        raise ValueError("the target half-width is a fraction between 0 and 0.5 (0.05 = +-5 points)")
    z = z_value(confidence)
    n = max(1, math.floor(z * z * accuracy * (1 - accuracy) / target_half_width**2))
    while half_width(accuracy, n, confidence) > target_half_width:
        n += 1
    while n > 1 and half_width(accuracy, n - 1, confidence) <= target_half_width:
        n -= 1
    return n


def width_ratio(trials_from: float, trials_to: float) -> float:
    """How much the width shrinks going from ``trials_from`` to ``trials_to`` (sqrt of their ratio)."""
    return math.sqrt(trials_from / trials_to)


def requests_for_points(requests: int, points: float) -> float:
    """How many requests a change of ``points`` (percentage points) is: 50 points of 24 requests is 12."""
    return requests * points / 100


def points_per_request(requests: int) -> float:
    """What one request is worth in percentage points (24 requests: 4.2 points each)."""
    return 100 / requests


def minimal_detectable_drop(accuracy: float, trials: float, power: float = 0.8, alpha: float = 0.05) -> float:
    """Smallest drop (as a fraction) from ``accuracy`` that a two-sided test at ``alpha`` detects with
    ``power``, when each arm has ``trials`` independent trials (two-proportion test on the arcsine scale,
    Cohen's h; pairing on the same requests only helps, so this is conservative for paired runs)."""
    if trials <= 0:
        return float("nan")
    h = NormalIndPower().solve_power(effect_size=None, nobs1=trials, alpha=alpha, power=power, ratio=1.0)
    phi = 2 * math.asin(math.sqrt(accuracy)) - float(h)
    if phi <= 0:
        return accuracy
    return accuracy - math.sin(phi / 2) ** 2


@dataclass(frozen=True)
class Plan:
    """What a planned measurement of one tool (or slice) can show."""

    accuracy: float
    requests: int
    seeds: int
    icc: float
    trials: float
    """Effective independent trials."""
    half_width: float
    minimal_drop: float
    requests_for_target: int | None
    target_half_width: float | None

    def lines(self) -> list[str]:
        out = [
            f"accuracy {100 * self.accuracy:.1f}% on {self.requests} requests x {self.seeds} seed(s) "
            f"(icc {self.icc:g}): {self.trials:.0f} effective trials",
            f"95% interval: about +-{100 * self.half_width:.1f} points",
            f"smallest drop detectable (80% power, 5% two-sided): {100 * self.minimal_drop:.1f} points "
            f"(= {requests_for_points(self.requests, 100 * self.minimal_drop):.1f} of {self.requests} requests)",
            f"one request is {points_per_request(self.requests):.1f} points",
        ]
        if self.requests_for_target is not None and self.target_half_width is not None:
            out.append(f"for +-{100 * self.target_half_width:g} points: {self.requests_for_target} requests "
                       f"at {self.seeds} seed(s) (icc {self.icc:g})")
        return out


def plan(accuracy: float, requests: int, seeds: int = 1, icc: float = 0.0,
         target_half_width: float | None = None, power: float = 0.8, alpha: float = 0.05) -> Plan:
    """Everything the planner prints for one tool or slice."""
    trials = effective_trials_planned(requests, seeds, icc)
    needed = None
    if target_half_width is not None:
        per_request = effective_trials_planned(1, seeds, icc)
        needed = math.ceil(trials_for_half_width(accuracy, target_half_width) / per_request)
    return Plan(accuracy=accuracy, requests=requests, seeds=seeds, icc=icc, trials=trials,
                half_width=half_width(accuracy, trials), minimal_drop=minimal_detectable_drop(accuracy, trials,
                                                                                              power, alpha),
                requests_for_target=needed, target_half_width=target_half_width)
