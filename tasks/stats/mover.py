"""MOVER: an interval for a weighted sum of independent estimates from each one's own interval.

Zou & Donner's method of variance estimates recovery (Zou and Donner 2008; Newcombe 2011 for weighted
sums of proportions): with estimates ``e_t``, intervals ``(l_t, u_t)`` and weights ``w_t >= 0``,

    low  = sum w_t e_t - sqrt(sum w_t^2 (e_t - l_t)^2)
    high = sum w_t e_t + sqrt(sum w_t^2 (u_t - e_t)^2)

Each side keeps the asymmetry of the parts' intervals (a tool that can only have dropped widens the
low side), and a part with a score interval keeps its width when nothing moved in it (a bootstrap would
give it none). Used for traffic-weighted and set-share-weighted changes over tools (tools are
independent strata) and for the weighted accuracy of one arm.
"""

from __future__ import annotations

import math
from typing import Sequence

from tasks.stats.estimate import Interval


def mover_sum(parts: Sequence[Interval], weights: Sequence[float], method: str = "MOVER") -> Interval:
    """The interval of ``sum w_t x_t`` from each part's interval (parts independent)."""
    if len(parts) != len(weights):
        raise ValueError("one weight per part")
    estimate = sum(w * p.estimate for p, w in zip(parts, weights))
    low_side = sum((w * (p.estimate - p.low)) ** 2 for p, w in zip(parts, weights))
    high_side = sum((w * (p.high - p.estimate)) ** 2 for p, w in zip(parts, weights))
    return Interval(estimate, estimate - math.sqrt(low_side), estimate + math.sqrt(high_side), method)


def mover_difference(first: Interval, second: Interval, method: str = "MOVER (Newcombe)",
                     correlation: float = 0.0) -> Interval:
    """The interval of ``first - second`` from the two intervals (Newcombe's hybrid score interval when
    both are Wilson intervals); conservative when the two are positively correlated, unless their
    ``correlation`` is given (Zou & Donner 2008's MOVER for correlated estimates: each side's square sum
    less ``2 r`` times the product of the two distances)."""
    r = max(-1.0, min(1.0, correlation))
    estimate = first.estimate - second.estimate
    a, b = first.estimate - first.low, second.high - second.estimate
    c, d = first.high - first.estimate, second.estimate - second.low
    low = estimate - math.sqrt(max(0.0, a ** 2 + b ** 2 - 2 * r * a * b))
    high = estimate + math.sqrt(max(0.0, c ** 2 + d ** 2 - 2 * r * c * d))
    return Interval(estimate, low, high, method)
