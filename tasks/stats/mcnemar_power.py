"""Power of the test the report runs on a change: the two-sided exact McNemar test on paired requests.

Each of ``n`` requests, measured before and after, independently goes right -> wrong with probability
``worse`` and wrong -> right with probability ``better`` (the *discordance*; the change is
``better - worse``). The number of discordant requests D is binomial(n, worse + better); given D, the
number that got worse is binomial(D, worse / (worse + better)); the test rejects at ``alpha`` when that
count reaches the exact critical value for D. Power sums over D. A drop is detectable with some power
when the power at that drop reaches it.

The discordance matters as much as the drop: a drop of d points made of requests that only got worse
(``better = 0``) is the easiest to detect; the same drop on top of churn (requests changing both ways)
needs more requests. ``detectable_drop`` states which it assumes.

Binomial tails come from the regularized incomplete beta function (``distributions.py``), or the normal
approximation once the binomial is wide, so a plan for thousands of requests takes well under a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from tasks.stats.distributions import binomial_pmfs, exact_mcnemar, normal_cdf, normal_quantile, regularized_beta

ALPHA = 0.05
EXACT_CHECK_UP_TO = 400
"""Critical counts up to this many discordant requests are checked with integer arithmetic."""
PMF_FLOOR = 1e-10
NORMAL_FROM = 200.0
"""Binomial variance above which tails use the normal approximation (error well under 1e-3 there)."""
"""Discordant counts less likely than this are left out of the power sum."""


def _upper_tail(c: int, d: int, p: float) -> float:
    """P(X >= c) for X ~ Binomial(d, p): the incomplete beta function, or, when the binomial is wide
    (variance over ``NORMAL_FROM``), the normal approximation with continuity correction."""
    if c <= 0:
        return 1.0
    if c > d:
        return 0.0
    variance = d * p * (1 - p)
    if variance > NORMAL_FROM:
        return 1.0 - normal_cdf((c - 0.5 - d * p) / math.sqrt(variance))
    return regularized_beta(p, c, d - c + 1)


@lru_cache(maxsize=65536)
def critical_count(discordant: int, alpha: float = ALPHA) -> int | None:
    """Smallest count c of ``discordant`` requests going one way that the two-sided exact McNemar test
    rejects at ``alpha`` (the test rejects at c or more, and at ``discordant - c`` or fewer); None when
    no split of that many discordant requests can reject."""
    if discordant <= 0:
        return None
    low, high = (discordant + 1) // 2, discordant
    if exact_mcnemar(high, 0) > alpha:
        return None
    if discordant > 100:  # bracket around the normal approximation before bisecting
        guess = int(discordant / 2 + normal_quantile(1 - alpha / 2) * math.sqrt(discordant) / 2)
        if 2 * _upper_tail(guess - 4, discordant, 0.5) > alpha:
            low = max(low, guess - 4)
        if 2 * _upper_tail(guess + 4, discordant, 0.5) <= alpha:
            high = min(high, guess + 4)
    while low < high:  # smallest c with 2 P(X >= c) <= alpha
        middle = (low + high) // 2
        if 2 * _upper_tail(middle, discordant, 0.5) <= alpha:
            high = middle
        else:
            low = middle + 1
    if discordant > EXACT_CHECK_UP_TO:
        return low
    # settle the float comparison with the exact (integer) test on either side of the boundary
    while low > (discordant + 1) // 2 and exact_mcnemar(low - 1, discordant - low + 1) <= alpha:
        low -= 1
    while low <= discordant and exact_mcnemar(low, discordant - low) > alpha:
        low += 1
    return low if low <= discordant else None


def mcnemar_power(n: int, worse: float, better: float = 0.0, alpha: float = ALPHA) -> float:
    """Probability that the exact McNemar test rejects at ``alpha`` on ``n`` paired requests when each
    goes right -> wrong with probability ``worse`` and wrong -> right with probability ``better``."""
    discordance = worse + better
    if n <= 0 or discordance <= 0:
        return 0.0
    discordance = min(1.0, discordance)
    share_worse = worse / (worse + better)
    power = 0.0
    for d, weight in enumerate(binomial_pmfs(n, discordance)):
        if weight < PMF_FLOOR or d == 0:
            continue
        c = critical_count(d, alpha)
        if c is None:
            continue
        # reject when the worse count is >= c or <= d - c
        power += weight * (_upper_tail(c, d, share_worse) + 1.0 - _upper_tail(d - c + 1, d, share_worse))
    return min(1.0, power)


@dataclass(frozen=True)
class DetectableDrop:
    """The smallest drop a paired exact McNemar test detects with the given power, and its assumptions."""

    drop: float | None
    """As a fraction (0.129 = 12.9 points); None when no drop possible at this accuracy reaches the power."""
    requests: int
    accuracy: float
    churn: float
    """Assumed share of requests going wrong -> right (as many more go right -> wrong on top of the drop)."""
    power: float
    alpha: float
    power_at_largest: float
    """Power if every request that can go wrong did (the largest drop possible)."""

    @property
    def largest_drop(self) -> float:
        return max(0.0, self.accuracy - self.churn)


def detectable_drop(accuracy: float, requests: int, power: float = 0.8, alpha: float = ALPHA,
                    churn: float = 0.0) -> DetectableDrop:
    """Smallest drop d (a fraction) from ``accuracy`` that the exact McNemar test on ``requests`` paired
    requests detects with probability ``power``: requests go right -> wrong with probability
    ``d + churn`` and wrong -> right with ``churn``. ``churn = 0``: every changed request got worse.

    A drop can make at most the requests that were right go wrong (``d + churn <= accuracy``) and churn
    at most turn the wrong ones right (``churn <= 1 - accuracy``)."""
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError("accuracy is a fraction between 0 and 1")
    if not 0.0 < power < 1.0:
        raise ValueError("power is a probability between 0 and 1 (0.8 = 80%)")
    churn = max(0.0, min(churn, 1.0 - accuracy, accuracy))
    largest = max(0.0, accuracy - churn)
    at_largest = mcnemar_power(requests, largest + churn, churn, alpha) if largest > 0 else 0.0
    if at_largest < power:
        return DetectableDrop(None, requests, accuracy, churn, power, alpha, at_largest)
    low, high = 0.0, largest
    for _ in range(40):
        middle = (low + high) / 2
        if mcnemar_power(requests, middle + churn, churn, alpha) >= power:
            high = middle
        else:
            low = middle
        if high - low < 1e-5:
            break
    return DetectableDrop(high, requests, accuracy, churn, power, alpha, at_largest)
