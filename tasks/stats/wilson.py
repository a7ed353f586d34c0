"""Wilson score intervals for a proportion: one count, and a request-clustered proportion (several seeds).

Seeds of one request are correlated (a request that is hard under one permutation of the tools is
usually hard under the others), so with several seeds the request, not the row, is the unit. The
clustered interval is Wilson's interval on an *effective* number of trials ``n*``:

1. Kish's effective n from the between-request (ratio estimator's sandwich) variance,
   ``V = n/(n-1) * sum_i (k_i - p m_i)^2 / M^2`` and ``n_kish = p(1-p) / V`` (at most the M rows);
2. a small-sample correction: Wilson's interval with a Student t quantile in place of z is Wilson's
   interval with z on ``n_kish (z/t)^2``. The t has Satterthwaite-style degrees of freedom, the
   effective number of requests carrying the variance less one: ``3 (sum e_i^2)^2 / sum e_i^4 - 1``
   with ``e_i = k_i - p m_i`` (the 3 is the normal kurtosis: n equal normal residuals give n), so that
   when a few requests carry all the failures the t is wide; kept between ``(n-1)/2`` and ``n-1``;
3. bounded by the two plain Wilson intervals: never wider than Wilson on the requests (a request's
   accuracy lies in 0..1, so its variance is at most p(1-p): that interval is conservative), never
   narrower than Wilson on the rows (``n_requests <= n* <= M``).

So one seed, or seeds that always agree, give exactly Wilson's interval on the requests; independent
seeds give about Wilson on the rows. With fewer than ``MIN_REQUESTS_FOR_SEEDS`` requests, or p = 0 or 1,
the seeds are not credited: Wilson on the requests. The t quantile is the Cornish-Fisher series
(Abramowitz & Stegun 26.7.5; within 2e-4 of the exact quantile at 4.5 or more degrees of freedom),
so that the SQL views can compute the same interval (``ci_low`` / ``ci_high`` columns).
"""

from __future__ import annotations

import math
from typing import Sequence

from tasks.stats.distributions import two_sided_quantile
from tasks.stats.estimate import CONFIDENCE, Interval

MIN_REQUESTS_FOR_SEEDS = 10
"""Below this many requests the between-request variance is not trusted to credit extra seeds."""


def wilson_bounds(p: float, n: float, z: float) -> tuple[float, float]:
    """Wilson's score interval for a proportion ``p`` observed on ``n`` (possibly fractional) trials."""
    if n <= 0:
        return 0.0, 1.0
    c = z * z / n
    centre = (p + c / 2) / (1 + c)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + c)
    return max(0.0, centre - half), min(1.0, centre + half)


def wilson_interval(correct: float, n: float, confidence: float = CONFIDENCE) -> Interval:
    """Wilson score interval for ``correct`` successes in ``n`` trials."""
    if n <= 0:
        return Interval(float("nan"), 0.0, 1.0, "wilson", 0.0)
    p = correct / n
    low, high = wilson_bounds(p, n, two_sided_quantile(confidence))
    return Interval(p, low, high, "wilson", float(n))


def t_quantile_series(df: float, z: float) -> float:
    """Student's t quantile from the normal one by the Cornish-Fisher series (A&S 26.7.5)."""
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def clustered_effective_trials(correct: float, rows: float, sum_e2: float, sum_e4: float, n_clusters: int,
                               confidence: float = CONFIDENCE) -> float:
    """``n*`` of the clustered interval from a group's sums: correct and rows, ``sum_i e_i^2`` and
    ``sum_i e_i^4`` with ``e_i = k_i - p m_i``, and the number of requests (see the module notes)."""
    if rows <= 0:
        return 0.0
    p = correct / rows
    if p <= 0.0 or p >= 1.0 or n_clusters < MIN_REQUESTS_FOR_SEEDS:
        return float(n_clusters)
    variance = sum_e2 / rows**2 * n_clusters / (n_clusters - 1)
    if variance <= 1e-15:
        kish = rows
    else:
        kish = min(rows, p * (1 - p) / variance)
    carrying = 3 * sum_e2 * sum_e2 / sum_e4 if sum_e4 > 0 else float(n_clusters)
    df = min(n_clusters - 1.0, max((n_clusters - 1.0) / 2, carrying - 1.0))
    z = two_sided_quantile(confidence)
    t = t_quantile_series(df, z)
    return min(rows, max(float(n_clusters), kish * (z / t) ** 2))


def clustered_wilson_from_sums(correct: float, rows: float, sum_e2: float, sum_e4: float, n_clusters: int,
                               confidence: float = CONFIDENCE) -> Interval:
    """The clustered interval from sums a GROUP BY gives (see ``clustered_effective_trials``)."""
    if rows <= 0:
        return Interval(float("nan"), 0.0, 1.0, "clustered wilson", 0.0)
    p = correct / rows
    n_star = clustered_effective_trials(correct, rows, sum_e2, sum_e4, n_clusters, confidence)
    low, high = wilson_bounds(p, n_star, two_sided_quantile(confidence))
    return Interval(p, low, high, "clustered wilson", n_star)


def cluster_sums(correct_per_request: Sequence[float], trials_per_request: Sequence[float]) -> tuple[float, float, float, float]:
    """(correct, rows, sum e^2, sum e^4) of per-request counts, ``e_i = k_i - p m_i``."""
    k = [float(x) for x in correct_per_request]
    m = [float(x) for x in trials_per_request]
    correct, rows = sum(k), sum(m)
    if rows <= 0:
        return correct, rows, 0.0, 0.0
    p = correct / rows
    residuals = [ki - p * mi for ki, mi in zip(k, m)]
    return correct, rows, sum(e * e for e in residuals), sum(e**4 for e in residuals)


def clustered_wilson_interval(correct_per_request: Sequence[float], trials_per_request: Sequence[float],
                              confidence: float = CONFIDENCE) -> Interval:
    """Wilson's interval with the request as the unit: per-request correct counts and trials (seeds)."""
    correct, rows, e2, e4 = cluster_sums(correct_per_request, trials_per_request)
    return clustered_wilson_from_sums(correct, rows, e2, e4, len(list(trials_per_request)), confidence)
