"""95% intervals for a proportion: Wilson for one run's count, request-clustered for several seeds.

Seeds of one request are correlated (a request that is hard under one permutation of the tools is
usually hard under the others), so with several seeds the request, not the row, is the unit:

- ``clustered_wilson_interval``: Wilson's interval on the *effective* number of trials. The variance of
  the pooled accuracy is estimated from whole requests (the ratio estimator's sandwich variance,
  ``sum_i (k_i - p m_i)^2 / (sum_i m_i)^2``); the effective n is ``p(1-p) / variance`` (Kish's design
  effect). One seed gives exactly Wilson's interval; three identical seeds give Wilson on the requests
  (the extra seeds add nothing); three independent seeds give about Wilson on the rows. The same formula
  is in the SQL views (``ci_low`` / ``ci_high`` columns), so the views and the report agree.
- ``cluster_bootstrap``: resampling whole requests (2,000 resamples, fixed seed: deterministic) for
  figures with no closed form (paired differences, weighted accuracy and its change, interaction gaps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy.stats import norm
from statsmodels.stats.proportion import proportion_confint

CONFIDENCE = 0.95
RESAMPLES = 2000
BOOTSTRAP_SEED = 20261130
"""Fixed seed of every bootstrap: the same rows always give the same interval."""


def z_value(confidence: float = CONFIDENCE) -> float:
    """Two-sided normal quantile: 1.96 for 95%."""
    return float(norm.ppf(0.5 + confidence / 2))


@dataclass(frozen=True)
class Interval:
    """An estimate with its interval (all as fractions, 0..1 for proportions)."""

    estimate: float
    low: float
    high: float
    method: str
    n_effective: float | None = None
    """Effective number of independent trials behind a proportion's interval, where that applies."""

    @property
    def half_width(self) -> float:
        """Half the interval's width (for an asymmetric interval, the mean of the two sides)."""
        return (self.high - self.low) / 2

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


def wilson_interval(correct: float, n: float, confidence: float = CONFIDENCE) -> Interval:
    """Wilson score interval for ``correct`` successes in ``n`` trials (statsmodels' proportion_confint)."""
    if n <= 0:
        return Interval(float("nan"), 0.0, 1.0, "wilson", 0.0)
    low, high = proportion_confint(correct, n, alpha=1 - confidence, method="wilson")
    return Interval(correct / n, max(0.0, float(low)), min(1.0, float(high)), "wilson", float(n))


def _effective(p: float, rows: float, variance: float, n_clusters: int) -> float:
    if rows <= 0:
        return 0.0
    if p <= 0.0 or p >= 1.0:
        return float(n_clusters)
    if variance <= 0.0:
        return rows
    return min(rows, p * (1 - p) / variance)


def effective_trials(correct_per_request: Sequence[float], trials_per_request: Sequence[float]) -> float:
    """Kish's effective number of trials of a pooled accuracy whose rows cluster in requests.

    ``n_eff = p(1-p) / V`` with ``V = sum_i (k_i - p m_i)^2 / (sum_i m_i)^2``; capped at the number of
    rows (never more informative than independent rows); at p = 0 or 1 it is the number of requests.
    """
    k = np.asarray(correct_per_request, dtype=float)
    m = np.asarray(trials_per_request, dtype=float)
    rows = float(m.sum())
    if rows == 0:
        return 0.0
    p = float(k.sum()) / rows
    variance = float(((k - p * m) ** 2).sum()) / rows**2
    return _effective(p, rows, variance, len(m))


def clustered_wilson_interval(correct_per_request: Sequence[float], trials_per_request: Sequence[float],
                              confidence: float = CONFIDENCE) -> Interval:
    """Wilson's interval on the effective number of trials: requests, not rows, are the unit."""
    k = np.asarray(correct_per_request, dtype=float)
    m = np.asarray(trials_per_request, dtype=float)
    rows = float(m.sum())
    if rows == 0:
        return Interval(float("nan"), 0.0, 1.0, "clustered wilson", 0.0)
    p = float(k.sum()) / rows
    n_eff = effective_trials(k, m)
    low, high = proportion_confint(p * n_eff, n_eff, alpha=1 - confidence, method="wilson")
    return Interval(p, max(0.0, float(low)), min(1.0, float(high)), "clustered wilson", n_eff)


def clustered_wilson_from_sums(correct: float, rows: float, sum_kk: float, sum_km: float, sum_mm: float,
                               n_clusters: int, confidence: float = CONFIDENCE) -> Interval:
    """The same interval from sums a GROUP BY gives: sum k, sum m, sum k^2, sum k*m, sum m^2 over clusters
    (``sum (k - p m)^2 = sum k^2 - 2 p sum k m + p^2 sum m^2``)."""
    if rows <= 0:
        return Interval(float("nan"), 0.0, 1.0, "clustered wilson", 0.0)
    p = correct / rows
    variance = max(0.0, sum_kk - 2 * p * sum_km + p * p * sum_mm) / rows**2
    if variance < 1e-15:
        variance = 0.0
    n_eff = _effective(p, rows, variance, n_clusters)
    low, high = proportion_confint(p * n_eff, n_eff, alpha=1 - confidence, method="wilson")
    return Interval(p, max(0.0, float(low)), min(1.0, float(high)), "clustered wilson", n_eff)


def _draw_counts(rng: np.random.Generator, n_clusters: int, resamples: int) -> np.ndarray:
    """(resamples x n_clusters) counts of n_clusters draws with replacement, one row per resample."""
    picks = rng.integers(0, n_clusters, size=(resamples, n_clusters))
    picks += np.arange(resamples)[:, None] * n_clusters
    return np.bincount(picks.ravel(), minlength=resamples * n_clusters).reshape(resamples, n_clusters).astype(float)


def bootstrap_weights(n_clusters: int, resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """How often each cluster (request) is drawn in each resample: shape (resamples, n_clusters)."""
    if n_clusters == 0:
        return np.zeros((resamples, 0))
    return _draw_counts(np.random.default_rng(seed), n_clusters, resamples)


def percentile_interval(estimate: float, replicates: np.ndarray, confidence: float = CONFIDENCE,
                        method: str = "cluster bootstrap") -> Interval:
    """The percentile interval of bootstrap replicates (NaN replicates, from empty resamples, dropped)."""
    replicates = np.asarray(replicates, dtype=float)
    replicates = replicates[~np.isnan(replicates)]
    if replicates.size == 0:
        return Interval(estimate, float("nan"), float("nan"), method)
    tail = (1 - confidence) / 2
    low, high = np.quantile(replicates, [tail, 1 - tail])
    return Interval(estimate, float(min(low, estimate)), float(max(high, estimate)), method)


def cluster_bootstrap(statistic: Callable[..., np.ndarray], columns: Sequence[Sequence[float]], estimate: float,
                      resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED,
                      strata: Sequence[int] | None = None, confidence: float = CONFIDENCE) -> Interval:
    """Percentile interval of ``statistic`` over resamples of whole clusters (requests).

    ``columns`` hold one value per cluster (e.g. correct seeds and trials per request, in each arm).
    Clusters with identical values are interchangeable, so they are pooled: a resample draws how many
    clusters of each distinct pattern it takes (a multinomial over the patterns, with their frequencies),
    which is the same distribution as drawing clusters one by one, at a cost that does not grow with the
    number of requests. With ``strata``, clusters are resampled within their stratum, which keeps its size.

    ``statistic(w, *columns)`` gets the weights (resamples x patterns: clusters drawn of each pattern) and
    the pattern values of each column, and returns one value per resample, e.g. ``(w @ k) / (w @ m)``.
    """
    data = np.column_stack([np.asarray(c, dtype=float) for c in columns]) if len(columns) else np.zeros((0, 0))
    if data.shape[0] == 0:
        return Interval(estimate, float("nan"), float("nan"), "cluster bootstrap")
    codes = np.zeros(data.shape[0], dtype=int) if strata is None else np.asarray(strata)
    rng = np.random.default_rng(seed)
    weights, patterns = [], []
    for stratum in np.unique(codes):
        members = data[codes == stratum]
        unique, counts = np.unique(members, axis=0, return_counts=True)
        total = int(counts.sum())
        weights.append(rng.multinomial(total, counts / total, size=resamples).astype(float))
        patterns.append(unique)
    w = np.hstack(weights)
    values = np.vstack(patterns)
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = statistic(w, *values.T)
    return percentile_interval(estimate, replicates, confidence)


def ratio_bootstrap_interval(correct_per_request: Sequence[float], trials_per_request: Sequence[float],
                             resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED) -> Interval:
    """Pooled accuracy ``sum k / sum m`` with a cluster-bootstrap interval over requests."""
    k = np.asarray(correct_per_request, dtype=float)
    m = np.asarray(trials_per_request, dtype=float)
    estimate = float(k.sum() / m.sum()) if m.sum() else float("nan")
    return cluster_bootstrap(lambda w, k_, m_: (w @ k_) / (w @ m_), [k, m], estimate, resamples, seed)


def seed_spread(per_seed: Sequence[float]) -> tuple[float, float, float, float]:
    """(mean, min, max, spread) of per-seed figures; the spread (max - min) is the noise floor."""
    values = np.asarray(per_seed, dtype=float)
    if values.size == 0:
        return (float("nan"),) * 4
    return float(values.mean()), float(values.min()), float(values.max()), float(values.max() - values.min())
