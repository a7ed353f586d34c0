"""Calibration of a selector that gives a confidence: reliability, ECE, Brier, terciles, coverage, and a
threshold fitted on one split of requests and confirmed on the other.

``confidence`` is the selector's probability that its pick is right; ``correct`` whether it was. The
same figures are GROUP BYs in ``warehouse/views/calibration_bins.sql`` and ``confidence_terciles.sql``;
these functions are their reference and serve the threshold finder, which needs the split.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tasks.stats.intervals import Interval, cluster_bootstrap, clustered_wilson_interval

BINS = 10


@dataclass(frozen=True)
class ReliabilityBin:
    """One of ten equal-width confidence bins: [low, high), the last one closed."""

    low: float
    high: float
    n: int
    mean_confidence: float | None
    accuracy: float | None


def bin_index(confidence: np.ndarray, bins: int = BINS) -> np.ndarray:
    """0-based equal-width bin of each confidence; 1.0 falls in the last bin (as in the SQL view)."""
    return np.minimum(np.floor(np.asarray(confidence, float) * bins), bins - 1).astype(int)


def reliability_bins(confidence: Sequence[float], correct: Sequence[bool], bins: int = BINS) -> list[ReliabilityBin]:
    c, y = np.asarray(confidence, float), np.asarray(correct, float)
    idx = bin_index(c, bins)
    out = []
    for b in range(bins):
        members = idx == b
        n = int(members.sum())
        out.append(ReliabilityBin(low=b / bins, high=(b + 1) / bins, n=n,
                                  mean_confidence=float(c[members].mean()) if n else None,
                                  accuracy=float(y[members].mean()) if n else None))
    return out


def expected_calibration_error(confidence: Sequence[float], correct: Sequence[bool], bins: int = BINS) -> float:
    """ECE: the row-weighted mean gap between confidence and accuracy over the ten bins."""
    total = len(confidence)
    if total == 0:
        return float("nan")
    return float(sum(b.n / total * abs(b.accuracy - b.mean_confidence)
                     for b in reliability_bins(confidence, correct, bins) if b.n))


def brier_score(confidence: Sequence[float], correct: Sequence[bool]) -> float:
    """Mean squared gap between the confidence in the pick and whether the pick was right (0 is perfect)."""
    c, y = np.asarray(confidence, float), np.asarray(correct, float)
    return float(np.mean((c - y) ** 2)) if len(c) else float("nan")


def multiclass_brier_score(probabilities: Sequence[dict[str, float]], expected: Sequence[str]) -> float:
    """Brier score over every offered option: sum_k (p_k - [k is expected])^2, averaged over rows."""
    scores = []
    for probs, label in zip(probabilities, expected):
        if not probs:
            continue
        total = sum((p - (1.0 if k == label else 0.0)) ** 2 for k, p in probs.items())
        if label not in probs:
            total += 1.0
        scores.append(total)
    return float(np.mean(scores)) if scores else float("nan")


def tercile_order(confidence: Sequence[float], *tiebreaks: Sequence) -> np.ndarray:
    """Tercile (1 = least confident .. 3 = most) of each row, ranked by confidence then the tiebreaks
    in order (as ``ntile(3) over (order by confidence, request_id, seed)`` in the SQL view)."""
    c = np.asarray(confidence, float)
    keys = tuple(np.asarray(t) for t in reversed(tiebreaks)) + (c,)
    order = np.lexsort(keys)
    n = len(c)
    terciles = np.empty(n, dtype=int)
    # ntile(3): the first n % 3 groups get one extra row
    sizes = [n // 3 + (1 if i < n % 3 else 0) for i in range(3)]
    start = 0
    for t, size in enumerate(sizes, start=1):
        terciles[order[start:start + size]] = t
        start += size
    return terciles


def tercile_gap(confidence: Sequence[float], correct: Sequence[bool], request_ids: Sequence[str],
                seeds: Sequence[int] | None = None) -> Interval:
    """Accuracy of the most confident third minus the least confident third, with a 95% interval that
    resamples whole requests (a request's seeds often share a confidence and a tercile)."""
    ids = np.asarray(request_ids)
    terciles = tercile_order(confidence, ids, *(() if seeds is None else (np.asarray(seeds),)))
    y = np.asarray(correct, float)
    uniq, inverse = np.unique(ids, return_inverse=True)
    n = len(uniq)

    def counts(t: int) -> tuple[np.ndarray, np.ndarray]:
        member = terciles == t
        return (np.bincount(inverse, y * member, n), np.bincount(inverse, member.astype(float), n))

    k1, m1 = counts(1)
    k3, m3 = counts(3)
    if m1.sum() == 0 or m3.sum() == 0:
        return Interval(float("nan"), float("nan"), float("nan"), "cluster bootstrap")
    estimate = float(k3.sum() / m3.sum() - k1.sum() / m1.sum())
    return cluster_bootstrap(lambda w, k1_, m1_, k3_, m3_: (w @ k3_) / (w @ m3_) - (w @ k1_) / (w @ m1_),
                             [k1, m1, k3, m3], estimate)


@dataclass(frozen=True)
class CoveragePoint:
    threshold: float
    coverage: float
    """Share of rows with confidence >= threshold (the decisions the router would keep)."""
    accuracy: float | None
    n_kept: int


def coverage_curve(confidence: Sequence[float], correct: Sequence[bool],
                   thresholds: Sequence[float] = tuple(np.round(np.arange(0, 1.0, 0.1), 2))) -> list[CoveragePoint]:
    c, y = np.asarray(confidence, float), np.asarray(correct, float)
    out = []
    for t in thresholds:
        kept = c >= t
        n = int(kept.sum())
        out.append(CoveragePoint(float(t), n / len(c) if len(c) else 0.0, float(y[kept].mean()) if n else None, n))
    return out


def request_split(request_id: str) -> str:
    """'fit' or 'confirm', fixed by the request id (sha256), so every run splits the same way."""
    return "fit" if hashlib.sha256(request_id.encode()).digest()[0] % 2 == 0 else "confirm"


@dataclass(frozen=True)
class ThresholdFit:
    """A threshold fitted on one split of requests and judged on the other."""

    target_accuracy: float
    threshold: float | None
    """Lowest confidence cut whose kept decisions reach the target on the fit split (None: none does)."""
    fit_accuracy: float | None
    fit_coverage: float
    fit_rows: int
    confirm_accuracy: Interval | None
    """Accuracy of kept decisions on the confirm split, with a request-clustered interval."""
    confirm_coverage: float
    confirm_rows: int

    @property
    def confirmed(self) -> bool | None:
        """Did the confirm split reach the target (point estimate)? None when there was nothing to confirm."""
        if self.confirm_accuracy is None:
            return None
        return self.confirm_accuracy.estimate >= self.target_accuracy


def find_threshold(confidence: Sequence[float], correct: Sequence[bool], request_ids: Sequence[str],
                   target_accuracy: float, min_kept: int = 10) -> ThresholdFit:
    """Fit the lowest threshold (most coverage) whose kept rows reach ``target_accuracy`` on the 'fit'
    requests, then report accuracy and coverage at that threshold on the 'confirm' requests.

    The threshold is never judged on the rows it was chosen on. Candidate thresholds are the observed
    confidences of the fit split; at least ``min_kept`` rows must be kept.
    """
    c, y = np.asarray(confidence, float), np.asarray(correct, bool)
    ids = np.asarray(request_ids)
    uniq_ids, inverse_ids = np.unique(ids, return_inverse=True)
    split = np.array([request_split(r) for r in uniq_ids])[inverse_ids] if len(ids) else np.array([], dtype=str)
    fit, confirm = split == "fit", split == "confirm"
    cf, yf = c[fit], y[fit]
    threshold = fit_acc = None
    fit_cov = 0.0
    if cf.size:
        order = np.argsort(-cf, kind="stable")
        hits = np.cumsum(yf[order])
        kept = np.arange(1, cf.size + 1)
        acc = hits / kept
        sorted_c = cf[order]
        # a cut at sorted_c[j] keeps every row with confidence >= it: the last index of a run of ties
        last_of_tie = np.r_[sorted_c[1:] != sorted_c[:-1], True]
        ok = np.flatnonzero(last_of_tie & (acc >= target_accuracy) & (kept >= min_kept))
        if ok.size:
            j = ok[-1]
            threshold, fit_acc, fit_cov = float(sorted_c[j]), float(acc[j]), float(kept[j] / cf.size)
    confirm_acc, confirm_cov = None, 0.0
    if threshold is not None and confirm.any():
        keep = confirm & (c >= threshold)
        confirm_cov = float(keep.sum() / confirm.sum())
        if keep.any():
            kept_ids, kept_y = ids[keep], y[keep]
            uniq, inverse = np.unique(kept_ids, return_inverse=True)
            k = np.bincount(inverse, kept_y.astype(float), len(uniq))
            m = np.bincount(inverse, minlength=len(uniq)).astype(float)
            confirm_acc = clustered_wilson_interval(k, m)
    return ThresholdFit(target_accuracy=target_accuracy, threshold=threshold, fit_accuracy=fit_acc,
                        fit_coverage=fit_cov, fit_rows=int(fit.sum()), confirm_accuracy=confirm_acc,
                        confirm_coverage=confirm_cov, confirm_rows=int(confirm.sum()))
