"""Power of the reading the report gives a change: its 95% paired score interval excludes 0.

The report reads a change between two arms on the same requests from the interval of the row-level change
(``paired.paired_change_interval``: Tango's score interval over requests, the requests' fractional changes
scaled by the design-effect factor f of ``paired_score.py``). A drop is *detected* when that interval lies
wholly below 0. This module gives the power of that reading, and the smallest drop with a given power, for
``n`` requests x ``m`` seeds, under the project's simulation model (``coverage.py``):

- a request's accuracy p ~ Beta(mean accuracy, concentration ``REQUEST_CONCENTRATION`` = 4);
- ``icc`` is the correlation of two seeds' verdicts on the same request *given its accuracy* (0 = seeds
  independent, 1 = every seed gives the same verdict). In the model a seed copies the request's shared
  verdict with probability ``sqrt(icc)`` (``seed_correlation``), else draws its own; icc = 1 is the model's
  deterministic router (requests right or wrong, seeds identical);
- the change, for icc < 1: a *shift* (every request loses the same share of its accuracy, p -> p (1 - d / a));
  the arms' seeds are drawn independently, so requests also change both ways by chance (churn). For
  icc = 1: *one-way* (a right request goes wrong with probability d / a, nothing goes wrong -> right).

How the power is computed (pure ``math``; ``tooleval plan`` imports no numpy):

- **one seed, or icc = 1** (every request's change is -1, 0 or +1): exactly. Of the D requests that
  changed, M went right -> wrong; the interval excludes 0 when Tango's statistic at 0 is beyond z,
  ``(M - (D - M) - c) / sqrt(D) > z`` (c = the interval's continuity correction, f = 1 here). D is
  binomial(n, w + b), M given D binomial(D, w / (w + b)), w and b the model's per-request chances of
  right -> wrong and wrong -> right; the power sums over D.
- **several seeds, icc < 1**: by the normal approximation of the same statistic. With the mean change
  -d, the variance V of a request's change (the clustered variance: between-request spread of the shift
  plus each arm's seed noise, ``(1 + (m - 1) icc) / m`` of a seed's) and its mean absolute value A, the
  interval's factor is ``f = (A - d^2) / V`` (kept within 1..m), and the interval excludes 0 when
  ``n f dbar - c > z sqrt(n f A)``; dbar ~ N(d, V / n) gives
  ``power = Phi((d - c / (n f) - z sqrt(A / (n f))) / sqrt(V / n))``.
  The moments integrate the seeds' count distributions over the Beta (Gauss-Legendre).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from tasks.stats.distributions import binomial_pmfs, normal_cdf, two_sided_quantile
from tasks.stats.paired_score import CORRECTION

ALPHA = 0.05
REQUEST_CONCENTRATION = 4.0
"""Concentration of the Beta request accuracies are drawn from (``coverage.KAPPA``; a test checks they agree)."""
PMF_FLOOR = 1e-12
_NODES = 32


def seed_correlation(icc: float) -> float:
    """The model's chance that a seed copies the request's shared verdict, for a within-request seed
    correlation ``icc`` (two copying seeds agree: the correlation is its square)."""
    return math.sqrt(icc)


def _check(accuracy: float, seeds: int, icc: float) -> None:
    if not 0.0 <= accuracy <= 1.0:
        raise ValueError("accuracy is a fraction between 0 and 1")
    if seeds < 1:
        raise ValueError("seeds must be at least 1")
    if not 0.0 <= icc <= 1.0:
        raise ValueError("icc is a correlation between 0 and 1")


# the model's moments ---------------------------------------------------------------------------------


def _beta_parameters(accuracy: float) -> tuple[float, float]:
    return accuracy * REQUEST_CONCENTRATION, (1 - accuracy) * REQUEST_CONCENTRATION


def discordance(accuracy: float, drop: float, icc: float, churn: float = 0.0) -> tuple[float, float]:
    """(w, b): one seed's chance that a request goes right -> wrong, and wrong -> right (w - b = drop).
    icc = 1: one-way (plus ``churn`` both ways); icc < 1: a shift, the arms' verdicts independent given p."""
    if icc >= 1.0:
        return drop + churn, churn
    if accuracy <= 0:
        return 0.0, 0.0
    keep = 1 - drop / accuracy
    second = accuracy * (1 - accuracy) / (REQUEST_CONCENTRATION + 1) + accuracy**2  # E[p^2]
    return accuracy - keep * second, keep * (accuracy - second)


@lru_cache(maxsize=8)
def _legendre(nodes: int) -> tuple[tuple[float, float], ...]:
    """Gauss-Legendre nodes and weights on [0, 1]."""
    out = []
    for i in range(1, nodes + 1):
        x = math.cos(math.pi * (i - 0.25) / (nodes + 0.5))
        for _ in range(100):
            p0, p1 = 1.0, x
            for k in range(2, nodes + 1):
                p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
            derivative = nodes * (x * p1 - p0) / (x * x - 1)
            step = p1 / derivative
            x -= step
            if abs(step) < 1e-15:
                break
        out.append(((1 - x) / 2, 1 / ((1 - x * x) * derivative * derivative)))
    return tuple(out)


def _beta_expectation(g, alpha: float, beta: float) -> tuple[float, ...]:
    """E[g(p)] (g returns a tuple) for p ~ Beta(alpha, beta), by Gauss-Legendre on each half of [0, 1]; an
    end where the density is infinite (exponent below 1) is integrated in s = p^alpha (or (1 - p)^beta),
    where it is not."""
    if beta <= 0:
        return g(1.0)
    if alpha <= 0:
        return g(0.0)
    norm = math.exp(math.lgamma(alpha) + math.lgamma(beta) - math.lgamma(alpha + beta))
    points: list[tuple[float, float]] = []  # (p, weight)
    for x, w in _legendre(_NODES):
        if alpha < 1:  # [0, 1/2]
            top = 0.5**alpha
            p = (top * x) ** (1 / alpha)
            points.append((p, w * top * (1 - p) ** (beta - 1) / alpha))
        else:
            p = 0.5 * x
            points.append((p, w * 0.5 * math.exp((alpha - 1) * math.log(p) + (beta - 1) * math.log1p(-p))))
        if beta < 1:  # [1/2, 1]
            top = 0.5**beta
            p = 1 - (top * x) ** (1 / beta)
            points.append((p, w * top * p ** (alpha - 1) / beta))
        else:
            p = 1 - 0.5 * x
            points.append((p, w * 0.5 * math.exp((alpha - 1) * math.log(p) + (beta - 1) * math.log1p(-p))))
    total: list[float] | None = None
    for p, w in points:
        values = g(p)
        total = [w * v for v in values] if total is None else [t + w * v for t, v in zip(total, values)]
    return tuple(t / norm for t in total)


def _seed_counts(q: float, seeds: int, copy: float) -> list[float]:
    """P(k of ``seeds`` right) for a request of accuracy q whose seeds copy one shared verdict with
    probability ``copy`` (else draw their own)."""
    out = [0.0] * (seeds + 1)
    for copied, weight in enumerate(binomial_pmfs(seeds, copy)):
        if weight < PMF_FLOOR:
            continue
        own = binomial_pmfs(seeds - copied, q)
        for k, pk in enumerate(own):
            out[k] += weight * (1 - q) * pk
            out[k + copied] += weight * q * pk
    return out


def _difference_counts(first: list[float], second: list[float]) -> list[float]:
    """P(Y - X = j) for j = -m..m (index j + m), X ~ ``first`` and Y ~ ``second`` independent on 0..m."""
    m = len(first) - 1
    out = [0.0] * (2 * m + 1)
    for i, px in enumerate(first):
        if px < PMF_FLOOR:
            continue
        for k, py in enumerate(second):
            out[k - i + m] += px * py
    return out


@dataclass(frozen=True)
class ChangeMoments:
    """Moments of one request's change d = (k_after - k_before) / m under the model."""

    mean: float
    mean_abs: float
    square: float
    """E[d^2]"""
    signed_square: float
    """E[d |d|]"""
    cube: float
    abs_cube: float
    fourth: float

    @property
    def variance(self) -> float:
        return self.square - self.mean**2


def change_moments(accuracy: float, drop: float, seeds: int, icc: float) -> ChangeMoments:
    """The moments of a request's change under the model (icc < 1: a shift; the seeds' count
    distributions integrated over the Beta of request accuracies)."""
    if icc >= 1.0:  # one-way, d in {-1, 0}
        return ChangeMoments(-drop, drop, drop, -drop, -drop, drop, drop)
    keep = 1 - drop / accuracy if accuracy > 0 else 1.0
    copy = seed_correlation(icc)
    values = [j / seeds for j in range(-seeds, seeds + 1)]

    def moments(p: float) -> tuple[float, ...]:
        pmf = _difference_counts(_seed_counts(p, seeds, copy), _seed_counts(keep * p, seeds, copy))
        return tuple(sum(w * g(v) for v, w in zip(values, pmf)) for g in _POWERS)

    return ChangeMoments(*_beta_expectation(moments, *_beta_parameters(accuracy)))


_POWERS = (lambda v: v, abs, lambda v: v * v, lambda v: v * abs(v), lambda v: v**3, lambda v: abs(v) ** 3,
           lambda v: v**4)


# power ------------------------------------------------------------------------------------------------


def _trinomial_power(n: int, worse: float, better: float, z: float, correction: float) -> float:
    """P(the interval lies below 0) when each request's change is -1 (``worse``), +1 (``better``) or 0.
    Tango's statistic at 0 with M of D changed requests going worse is (2M - D - c) / sqrt(D)."""
    moved = min(1.0, worse + better)
    if n <= 0 or moved <= 0:
        return 0.0
    share = worse / moved
    power = 0.0
    for d, weight in enumerate(binomial_pmfs(n, moved)):
        if d == 0 or weight < PMF_FLOOR:
            continue
        critical = math.floor((d + correction + z * math.sqrt(d)) / 2) + 1  # smallest M with 2M - D - c > z sqrt(D)
        if critical > d:
            continue
        power += weight * sum(binomial_pmfs(d, share)[critical:])
    return min(1.0, power)


def _factor(n: int, means: tuple[float, float, float]) -> float:
    """The interval's factor f before it is kept within 1..m: (mean|d| - dbar^2) / s^2."""
    mean, mean_abs, square = means
    variance = (square - mean * mean) * n / max(1, n - 1)
    trinomial = mean_abs - mean * mean
    if trinomial <= 0:
        return 1.0
    return trinomial / variance if variance > 0 else math.inf


def _statistic(n: int, means: tuple[float, float, float], factor: float | None) -> float:
    """Tango's statistic at 0, towards a drop, as a function of the sample means of (d, |d|, d^2):
    ``(f n (-dbar) - c) / sqrt(f n mean|d|)``; f = ``factor`` when the interval keeps it at 1 or m, else
    the unclamped ``_factor`` (the derivatives are taken within one regime: none across its kinks)."""
    mean, mean_abs, _ = means
    f = _factor(n, means) if factor is None else factor
    if mean_abs <= 0 or not math.isfinite(f):
        return 0.0
    return (f * n * -mean - CORRECTION) / math.sqrt(f * n * mean_abs)


def change_power(accuracy: float, drop: float, requests: int, seeds: int = 1, icc: float = 1.0,
                 alpha: float = ALPHA, churn: float = 0.0) -> float:
    """Probability that the report's paired change interval lies wholly below 0 when the true change is
    -``drop`` (see the module notes for the model; ``churn`` only with icc = 1)."""
    _check(accuracy, seeds, icc)
    z = two_sided_quantile(1 - alpha)
    n = int(requests)
    if drop <= 0 or n <= 0:
        return 0.0
    if seeds == 1 or icc >= 1.0:
        worse, better = discordance(accuracy, drop, icc, churn)
        return _trinomial_power(n, worse, better, z, CORRECTION)
    mo = change_moments(accuracy, drop, seeds, icc)
    if mo.mean_abs <= 0:
        return 0.0
    # the statistic's mean and standard error by the delta method over the sample means of (d, |d|, d^2)
    centre = (mo.mean, mo.mean_abs, mo.square)
    covariance = (
        (mo.square - mo.mean**2, mo.signed_square - mo.mean * mo.mean_abs, mo.cube - mo.mean * mo.square),
        (0.0, mo.square - mo.mean_abs**2, mo.abs_cube - mo.mean_abs * mo.square),
        (0.0, 0.0, mo.fourth - mo.square**2),
    )
    free = _factor(n, centre)
    factor = None if 1.0 < free < seeds else min(float(seeds), max(1.0, free))

    def at(shifts: dict[int, float]) -> float:
        return _statistic(n, tuple(c + shifts.get(j, 0.0) for j, c in enumerate(centre)), factor)

    steps = [1e-4 * max(1e-2, abs(c)) for c in centre]
    gradient = [(at({i: steps[i]}) - at({i: -steps[i]})) / (2 * steps[i]) for i in range(3)]
    spread = sum(gradient[i] * gradient[j] * covariance[min(i, j)][max(i, j)] for i in range(3) for j in range(3)) / n
    if spread <= 0:
        return 0.0
    # second order: the statistic's mean moves by half the trace of its Hessian times the covariance / n
    bias = 0.0
    for i in range(3):
        for j in range(3):
            hi, hj = steps[i], steps[j]
            if i == j:
                second = (at({i: hi}) - 2 * at({}) + at({i: -hi})) / (hi * hi)
            else:
                second = (at({i: hi, j: hj}) - at({i: hi, j: -hj}) - at({i: -hi, j: hj})
                          + at({i: -hi, j: -hj})) / (4 * hi * hj)
            bias += 0.5 * second * covariance[min(i, j)][max(i, j)] / n
    return normal_cdf((at({}) + bias - z) / math.sqrt(spread))


@dataclass(frozen=True)
class PlannedDrop:
    """The smallest drop the report's interval detects with the given power, and what it assumes."""

    drop: float | None
    """As a fraction (0.039 = 3.9 points); None when no drop possible at this accuracy reaches the power."""
    accuracy: float
    requests: int
    seeds: int
    icc: float
    power: float
    alpha: float
    power_at_largest: float
    """Power at the largest drop possible (every request losing all its accuracy)."""
    churn: float = 0.0

    @property
    def largest_drop(self) -> float:
        return max(0.0, self.accuracy - self.churn)


def planned_drop(accuracy: float, requests: int, seeds: int = 1, icc: float = 1.0, power: float = 0.8,
                 alpha: float = ALPHA, churn: float = 0.0) -> PlannedDrop:
    """Smallest drop d (a fraction) whose power (``change_power``) reaches ``power``."""
    _check(accuracy, seeds, icc)
    if not 0.0 < power < 1.0:
        raise ValueError("power is a probability between 0 and 1 (0.8 = 80%)")
    churn = max(0.0, min(churn, 1.0 - accuracy, accuracy)) if icc >= 1.0 else 0.0
    largest = max(0.0, accuracy - churn)
    at_largest = change_power(accuracy, largest, requests, seeds, icc, alpha, churn) if largest > 0 else 0.0
    if at_largest < power:
        return PlannedDrop(None, accuracy, requests, seeds, icc, power, alpha, at_largest, churn)
    # regula falsi with the Illinois step on power(d) - target (increasing in d), halving every third step
    low, high = 0.0, largest
    g_low, g_high = -power, at_largest - power
    kept = 0
    for step in range(60):
        if high - low <= 1e-5:
            break
        middle = (low + high) / 2
        if step % 3 != 2 and g_high != g_low:
            falsi = (low * g_high - high * g_low) / (g_high - g_low)
            if low < falsi < high:
                middle = falsi
        value = change_power(accuracy, middle, requests, seeds, icc, alpha, churn) - power
        if abs(value) < 1e-5:
            high = middle
            break
        if value >= 0:
            high, g_high = middle, value
            if kept == -1:
                g_low /= 2
            kept = -1
        else:
            low, g_low = middle, value
            if kept == 1:
                g_high /= 2
            kept = 1
    return PlannedDrop(high, accuracy, requests, seeds, icc, power, alpha, at_largest, churn)
