"""Quantiles and tails the statistics need, in closed form with ``math`` (no scipy, no statsmodels).

- the normal quantile (``statistics.NormalDist``, exact to machine precision);
- Student's t distribution function and quantile (the regularized incomplete beta function by its
  continued fraction, inverted by bisection: 1e-12 in probability);
- binomial probabilities.

Checked against scipy.stats in tests/stats/test_stats_distributions.py.
"""

from __future__ import annotations

import math
from statistics import NormalDist

_STANDARD_NORMAL = NormalDist()


def normal_quantile(probability: float) -> float:
    """The standard normal quantile: normal_quantile(0.975) = 1.95996..."""
    return _STANDARD_NORMAL.inv_cdf(probability)


def normal_cdf(x: float) -> float:
    return _STANDARD_NORMAL.cdf(x)


def two_sided_quantile(confidence: float) -> float:
    """The normal quantile of a two-sided interval: 1.96 for 95%."""
    return normal_quantile(0.5 + confidence / 2)


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-15:
            break
    return h


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def t_cdf(x: float, df: float) -> float:
    """Student's t distribution function with ``df`` degrees of freedom."""
    if math.isinf(df):
        return normal_cdf(x)
    tail = 0.5 * regularized_beta(df / (df + x * x), df / 2.0, 0.5)
    return 1.0 - tail if x > 0 else tail


def t_quantile(probability: float, df: float) -> float:
    """Student's t quantile: t_quantile(0.975, 19) = 2.093..."""
    if not 0.0 < probability < 1.0:
        raise ValueError("probability must be strictly between 0 and 1")
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    if math.isinf(df) or df > 1e7:
        return normal_quantile(probability)
    if probability < 0.5:
        return -t_quantile(1.0 - probability, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < probability:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2
        if t_cdf(middle, df) < probability:
            low = middle
        else:
            high = middle
        if high - low < 1e-13 * max(1.0, high):
            break
    return (low + high) / 2


def two_sided_t_quantile(confidence: float, df: float) -> float:
    """The t quantile of a two-sided interval: 2.093 for 95% on 19 degrees of freedom."""
    return t_quantile(0.5 + confidence / 2, df)


def binomial_pmf(k: int, n: int, p: float) -> float:
    if k < 0 or k > n:
        return 0.0
    if p <= 0.0:
        return 1.0 if k == 0 else 0.0
    if p >= 1.0:
        return 1.0 if k == n else 0.0
    log = (math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p)
           + (n - k) * math.log1p(-p))
    return math.exp(log)


def binomial_pmfs(n: int, p: float) -> list[float]:
    """P(X = k) for k = 0..n, X ~ Binomial(n, p) (by the recurrence from the mode, no underflow trouble)."""
    if p <= 0.0:
        return [1.0] + [0.0] * n
    if p >= 1.0:
        return [0.0] * n + [1.0]
    mode = min(n, int((n + 1) * p))
    out = [0.0] * (n + 1)
    out[mode] = binomial_pmf(mode, n, p)
    ratio = p / (1.0 - p)
    for k in range(mode, n):
        out[k + 1] = out[k] * (n - k) / (k + 1) * ratio
    for k in range(mode, 0, -1):
        out[k - 1] = out[k] * k / (n - k + 1) / ratio
    return out
