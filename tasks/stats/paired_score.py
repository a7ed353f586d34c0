"""Score intervals for a change measured on the same requests twice (paired), in closed form.

**Tango's score interval** (Tango 1998) for a paired difference of proportions: of n paired requests,
``plus`` went wrong -> right and ``minus`` right -> wrong. The change is ``(plus - minus) / n``; for a
candidate change d, the score statistic is

    Z(d) = (plus - minus - n d) / sqrt(n (2 q(d) + d (1 - d)))

with ``q(d)`` the constrained maximum-likelihood share of right -> wrong requests when the change is d
(closed form). The interval is every d with ``|Z(d)| <= z``. Unlike a bootstrap over requests it does
not collapse when every changed request moved the same way, nor when none moved (0 of 24 changed still
leaves about +-14 points).

**Requests with several seeds: the design effect.** The request is the cluster and its seeds are repeated
measurements of it (never votes). A request's accuracy in an arm is a fraction (2 of 3 seeds right), so its
change ``d_i`` lies in -1..1 rather than being -1, 0 or +1. The counts become masses (``plus`` = sum of the
positive ``d_i``, ``minus`` = of the negative ones), and the score interval is taken on the counts divided by
the design effect, as Rao & Scott (1992, "A simple method for the analysis of clustered binary data",
Biometrics 48: 577-585) do for any method built for independent trials: ``f = 1 / deff`` is the ratio of the
variance the counts would have as independent +-1 changes (the trinomial ``mean|d| - mean(d)^2``) to the
variance observed between requests (the clustered, sandwich variance of the mean). f is 1 when every request
moved all-or-nothing (a deterministic router: Tango's interval on the requests) and at most the number of
seeds (the rows as independent pairs, seeds that disagree as often as chance makes them). The same f gives
the interval and its p-value (``paired_score_test``): the test the interval inverts, so the two never
disagree. The same construction serves any per-request contrast bounded by 1 in absolute value (an
interaction gap is scaled by 1/2 first).

``paired_score_interval`` returns the interval for a mean of per-request contrasts, ``paired_score_test`` the
interval with the two-sided p-value of the same score test at 0; the callers
(``tasks/stats/paired.py``, ``interaction.py``, the report's position contrast) build the contrasts.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from tasks.stats.distributions import normal_cdf, two_sided_quantile
from tasks.stats.estimate import CONFIDENCE, Interval

_TOLERANCE = 5e-14
"""Width of the bracket at which a bound is settled."""
_MAX_STEPS = 200


def _constrained_minus(plus: float, minus: float, n: float, d: float) -> float:
    """Tango's constrained MLE of the right -> wrong share when the change is d."""
    a = 2 * n
    b = -plus - minus + (2 * n - plus + minus) * d
    c = -minus * d * (1 - d)
    root = b * b - 4 * a * c
    return max(0.0, (math.sqrt(max(0.0, root)) - b) / (2 * a))


CORRECTION = 0.25
"""Continuity correction of the score statistic, in requests: ``plus - minus`` moves this far towards
``n d`` before it is divided by its standard error (a quarter of a request, half the usual Yates half
unit); it matters on small sets and is negligible past a few hundred requests."""


def tango_score(plus: float, minus: float, n: float, d: float, correction: float = 0.0) -> float:
    """Z(d) of Tango's score test (positive when the observed change is above d), with an optional
    continuity correction that moves the observed difference ``plus - minus`` towards n d."""
    q = _constrained_minus(plus, minus, n, d)
    variance = n * (2 * q + d * (1 - d))
    difference = plus - minus - n * d
    difference = math.copysign(max(0.0, abs(difference) - correction), difference)
    if variance <= 0:
        return math.copysign(math.inf, difference) if difference else 0.0
    return difference / math.sqrt(variance)


def tango_interval(plus: float, minus: float, n: float, confidence: float = CONFIDENCE,
                   correction: float = CORRECTION) -> tuple[float, float]:
    """Tango's score interval for the paired change ``(plus - minus) / n`` (counts may be fractional)."""
    if n <= 0:
        return -1.0, 1.0
    z = two_sided_quantile(confidence)
    estimate = (plus - minus) / n

    def solve(low: float, high: float, target: float) -> float:
        return _decreasing_root(lambda d: tango_score(plus, minus, n, d, correction) - target, low, high)

    lower = -1.0 if tango_score(plus, minus, n, -1.0 + 1e-12, correction) <= z else solve(-1.0 + 1e-12, estimate, z)
    upper = 1.0 if tango_score(plus, minus, n, 1.0 - 1e-12, correction) >= -z else solve(estimate, 1.0 - 1e-12, -z)
    return min(lower, estimate), max(upper, estimate)


def _decreasing_root(g: Callable[[float], float], low: float, high: float) -> float:
    """d in [low, high] with g(d) = 0, for g decreasing with g(low) > 0 >= g(high): regula falsi with the
    Illinois step (the end that stays twice running has its value halved), a halving of the bracket every
    third step and whenever an end's value is infinite. Every step keeps the root bracketed, as halving did,
    in about half the evaluations of plain halving, with the same bounds to rounding."""
    g_low, g_high = g(low), g(high)
    kept = 0  # +1: low moved last (high kept), -1: high moved last
    for step in range(_MAX_STEPS):
        if high - low <= _TOLERANCE:
            break
        middle = (low + high) / 2
        if step % 3 != 2 and math.isfinite(g_low) and math.isfinite(g_high) and g_low != g_high:
            falsi = (low * g_high - high * g_low) / (g_high - g_low)
            if low < falsi < high:
                middle = falsi
        value = g(middle)
        if value > 0:
            low, g_low = middle, value
            if kept == 1:
                g_high /= 2
            kept = 1
        else:
            high, g_high = middle, value
            if kept == -1:
                g_low /= 2
            kept = -1
    return (low + high) / 2


def effective_scale(mean_abs: float, mean: float, variance: float, cap: float) -> float:
    """f = 1 / design effect: how many independent +-1 changes one request's fractional change is worth
    (1 .. cap); see the module notes."""
    trinomial = mean_abs - mean * mean
    if trinomial <= 1e-15:
        return 1.0
    if variance <= 1e-15:
        return max(1.0, cap)
    return min(max(1.0, cap), max(1.0, trinomial / variance))


def _scaled_counts(d: list[float], residuals: Sequence[float] | None, rows_per_request: float,
                   scale: float | None) -> tuple[float, float, float, float]:
    """(f plus, f minus, f n, f) of per-request contrasts ``d`` (see the module notes)."""
    n = len(d)
    mean = sum(d) / n
    if residuals is None:
        residuals = [x - mean for x in d]
    variance = sum(float(e) * float(e) for e in residuals) / max(1, n - 1)
    plus = sum(x for x in d if x > 0)
    minus = -sum(x for x in d if x < 0)
    f = effective_scale((plus + minus) / n, mean, variance, rows_per_request) if scale is None else scale
    return f * plus, f * minus, f * n, f


def paired_score_interval(contrasts: Sequence[float], residuals: Sequence[float] | None = None,
                          rows_per_request: float = 1.0, confidence: float = CONFIDENCE,
                          method: str = "paired score (Tango)", scale: float | None = None) -> Interval:
    """Interval for the mean of per-request contrasts ``d_i`` in -1..1 (e.g. accuracy after - before).

    ``residuals`` are the per-request deviations whose mean square is the estimate's variance times n
    (for a ratio of sums, the linearised residuals; by default ``d_i - mean``). ``rows_per_request`` caps
    the scale f (seeds per request); ``scale`` sets f instead (``weighted.py``). See the module notes.
    """
    interval, _ = paired_score_test(contrasts, residuals, rows_per_request, confidence, method, scale)
    return interval


def paired_score_test(contrasts: Sequence[float], residuals: Sequence[float] | None = None,
                      rows_per_request: float = 1.0, confidence: float = CONFIDENCE,
                      method: str = "paired score (Tango)", scale: float | None = None) -> tuple[Interval, float]:
    """The interval of ``paired_score_interval`` and the two-sided p-value of the score test it inverts, at a
    change of 0 (same scale, same continuity correction): p < 1 - confidence exactly when the interval
    excludes 0. p is 1 for no contrasts."""
    d = [float(x) for x in contrasts]
    n = len(d)
    if n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), method), 1.0
    mean = sum(d) / n
    plus, minus, total, f = _scaled_counts(d, residuals, rows_per_request, scale)
    low, high = tango_interval(plus, minus, total, confidence)
    z0 = tango_score(plus, minus, total, 0.0, CORRECTION)
    p = min(1.0, 2 * (1 - normal_cdf(abs(z0))))
    return Interval(mean, min(low, mean), max(high, mean), method, n_effective=total), p
