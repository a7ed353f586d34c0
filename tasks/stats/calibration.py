"""Calibration of a selector that gives a confidence: reliability, ECE, Brier, terciles, coverage, and a
threshold fitted on one split of requests and confirmed on the other.

``confidence`` is the selector's probability that its pick is right; ``correct`` whether it was. The
same figures are GROUP BYs in ``tasks/selection/views/calibration_bins.sql`` and ``confidence_terciles.sql``;
these functions are their reference and serve the threshold finder, which needs the split.

The request is the unit of every interval (a request's seeds share its difficulty and often its
confidence): tercile and bin accuracies carry request-clustered Wilson intervals, the gap between the
most and least confident thirds their MOVER (Newcombe) difference, the Brier score a request-clustered
t interval; the threshold finder keeps at least ``min_kept`` requests, not rows.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from tasks.stats.distributions import two_sided_t_quantile
from tasks.stats.estimate import CONFIDENCE, Interval
from tasks.stats.mover import mover_difference
from tasks.stats.wilson import clustered_wilson_interval

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


CALIBRATED_DRAWS = 5_000
CALIBRATED_SEED = 28
"""Draws and seed of ``ece_if_calibrated``: the seed fixed, so the report's figure recomputes exactly; the draws
enough that another seed barely moves the printed 95th percentile."""
CALIBRATED_ROW_DRAWS = 4_000_000
"""Distinct (request, confidence) rows x draws at most: an arm with more than 800 of them gets fewer draws (at
least 50), so the floor's cost per arm stays bounded however large the run (its floor is small there anyway).
The seeds of a deterministic router give one such row a request."""


CALIBRATED_CHUNK_CELLS = 65_536
"""Draws x distinct rows simulated at once by ``ece_if_calibrated``."""


@dataclass(frozen=True)
class EceIfCalibrated:
    """The ECE a perfectly calibrated selector would show with the same confidences on as many requests.

    Binned ECE is never 0 on a finite set: each bin's accuracy is a sample. Each draw makes every request
    right with the probability of its confidence (one uniform number a request, so its seeds move together,
    as a deterministic router's do) and measures the ECE of the draw."""

    median: float
    high: float
    """The 95th percentile of the draws: an ECE above it is miscalibration the requests can show."""
    p_value: float
    """Share of the draws with an ECE at least the one measured."""
    draws: int


def ece_if_calibrated(confidence: Sequence[float], correct: Sequence[bool], request_ids: Sequence[str],
                      draws: int = CALIBRATED_DRAWS, seed: int = CALIBRATED_SEED,
                      bins: int = BINS) -> EceIfCalibrated | None:
    """The measured ECE's noise floor: the ECEs of ``draws`` perfectly calibrated outcomes (see the class).
    A goal of an ECE below the floor asks for less than a calibrated router shows on as many requests."""
    c = np.asarray(confidence, float)
    if not len(c):
        return None
    measured = expected_calibration_error(c, correct, bins)
    _, request = np.unique(np.asarray(request_ids), return_inverse=True)
    # rows of one request with one confidence (its seeds, for a deterministic router) move together: one
    # column each, weighted by its rows
    pairs, weights = np.unique(np.column_stack([request.reshape(-1), c]), axis=0, return_counts=True)
    request, c_unique = pairs[:, 0].astype(np.int64), pairs[:, 1]
    draws = max(min(draws, 50), min(draws, CALIBRATED_ROW_DRAWS // len(c_unique)))
    onehot = np.zeros((len(c_unique), bins), dtype=np.float32)
    onehot[np.arange(len(c_unique)), bin_index(c_unique, bins)] = weights
    expected_right = c_unique @ onehot  # per bin: the sum of the confidences
    c32 = c_unique.astype(np.float32)
    rng = np.random.default_rng(seed)
    eces = []
    # a chunk of draws small enough that the product below stays on one BLAS thread (a larger one wakes
    # OpenBLAS's other threads, which spin for more CPU than they save) and memory stays bounded on a
    # large run; the random numbers are one stream, so the chunks' sizes do not change the draws
    chunk = max(1, min(draws, CALIBRATED_CHUNK_CELLS // len(c_unique)))
    for start in range(0, draws, chunk):
        size = min(chunk, draws - start)
        u = rng.random((size, int(request.max()) + 1), dtype=np.float32)  # one number a request
        right = (u[:, request] < c32[None, :]).astype(np.float32)
        eces.extend(np.abs(right @ onehot - expected_right[None, :]).sum(axis=1) / len(c))
    values = np.asarray(eces)
    return EceIfCalibrated(median=float(np.median(values)), high=float(np.quantile(values, 0.95)),
                           p_value=float((values >= measured - 1e-12).mean()), draws=draws)


TEMPERATURES = np.exp(np.linspace(np.log(1e-3), np.log(1e3), 461))
"""The temperatures ``fit_temperature`` weighs: log-spaced from 0.001 to 1000, 3% apart."""


def _padded(probabilities: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """Rows of any width as one matrix, short rows padded with probability 0 (an option never offered)."""
    if isinstance(probabilities, np.ndarray):
        return np.asarray(probabilities, float)
    width = max((len(row) for row in probabilities), default=0)
    out = np.zeros((len(probabilities), width))
    for i, row in enumerate(probabilities):
        out[i, :len(row)] = row
    return out


def tempered_probabilities(probabilities: Sequence[Sequence[float]] | np.ndarray, temperature: float) -> np.ndarray:
    """Each row's probabilities raised to ``1 / temperature`` and renormalised: the softmax of the log
    probabilities over the temperature, so a softmax router's tempered probabilities are those of its
    scores over (its temperature x ``temperature``). The order of the options, and so the pick, never
    changes; above 1 the confidence falls towards uniform, below 1 it rises towards the pick."""
    p = _padded(probabilities)
    with np.errstate(divide="ignore"):
        logs = np.log(p)
    top = logs.max(axis=1, keepdims=True) if p.size else logs
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp((logs - top) / temperature)
    total = e.sum(axis=1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def fit_temperature(probabilities: Sequence[Sequence[float]] | np.ndarray, correct: Sequence[bool]) -> float:
    """The temperature (of ``tempered_probabilities``) that minimises the log loss of the confidence in the
    pick against whether the pick was right, over ``TEMPERATURES``: top-label temperature scaling, the
    calibration the report's ECE measures. 1.0 when there is nothing to fit (no row with a choice to make)."""
    p = _padded(probabilities)
    y = np.asarray(correct, bool)
    if not len(p):
        return 1.0
    with np.errstate(divide="ignore"):
        logs = np.log(p)
    gaps = logs - logs.max(axis=1, keepdims=True)  # <= 0; -inf for an option never offered
    gaps = np.where(np.isfinite(gaps), gaps, -np.inf)
    losses = []
    for temperature in TEMPERATURES:
        confidence = 1.0 / np.exp(gaps / temperature).sum(axis=1)
        c = np.clip(confidence, 1e-12, 1.0 - 1e-12)
        losses.append(-np.where(y, np.log(c), np.log1p(-c)).sum())
    losses = np.asarray(losses)
    if np.ptp(losses) < 1e-9:  # every confidence is 1 (or the same whatever the temperature)
        return 1.0
    return float(TEMPERATURES[int(np.argmin(losses))])


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


def _clustered(y: np.ndarray, member: np.ndarray, inverse: np.ndarray, n: int) -> Interval | None:
    """Clustered Wilson interval of the accuracy of the member rows (requests as clusters)."""
    k = np.bincount(inverse, y * member, n)
    m = np.bincount(inverse, member.astype(float), n)
    keep = m > 0
    if not keep.any():
        return None
    return clustered_wilson_interval(k[keep], m[keep])


def _group_intervals(correct: Sequence[bool], request_ids: Sequence[str], group: np.ndarray,
                     groups: Sequence[int]) -> list[Interval | None]:
    """The accuracy of each group's rows (``group == g``) with a request-clustered Wilson interval."""
    y = np.asarray(correct, float)
    uniq, inverse = np.unique(np.asarray(request_ids), return_inverse=True)
    return [_clustered(y, group == g, inverse, len(uniq)) for g in groups]


def tercile_intervals(confidence: Sequence[float], correct: Sequence[bool], request_ids: Sequence[str],
                      seeds: Sequence[int] | None = None) -> list[Interval | None]:
    """Accuracy of the least, middle and most confident thirds, each with a request-clustered interval."""
    ids = np.asarray(request_ids)
    terciles = tercile_order(confidence, ids, *(() if seeds is None else (np.asarray(seeds),)))
    return _group_intervals(correct, ids, terciles, (1, 2, 3))


def tercile_gap(confidence: Sequence[float], correct: Sequence[bool], request_ids: Sequence[str],
                seeds: Sequence[int] | None = None) -> Interval:
    """Accuracy of the most confident third minus the least confident third, with a 95% interval from
    the two thirds' request-clustered Wilson intervals (MOVER; conservative when a request's seeds fall
    in both thirds)."""
    low, _, high = tercile_intervals(confidence, correct, request_ids, seeds)
    if low is None or high is None:
        return Interval(float("nan"), float("nan"), float("nan"), "MOVER (Newcombe)")
    return mover_difference(high, low)


def bin_intervals(confidence: Sequence[float], correct: Sequence[bool], request_ids: Sequence[str],
                  bins: int = BINS) -> list[Interval | None]:
    """Accuracy of each equal-width confidence bin with a request-clustered Wilson interval."""
    return _group_intervals(correct, request_ids, bin_index(np.asarray(confidence, float), bins), range(bins))


def brier_interval(confidence: Sequence[float], correct: Sequence[bool], request_ids: Sequence[str],
                   confidence_level: float = CONFIDENCE) -> Interval:
    """Brier score (mean squared gap between confidence and correctness) with a request-clustered t
    interval (the ratio estimator's variance over requests, n - 1 degrees of freedom)."""
    c, y = np.asarray(confidence, float), np.asarray(correct, float)
    if not len(c):
        return Interval(float("nan"), float("nan"), float("nan"), "clustered t")
    uniq, inverse = np.unique(np.asarray(request_ids), return_inverse=True)
    n = len(uniq)
    s = np.bincount(inverse, (c - y) ** 2, n)
    m = np.bincount(inverse, minlength=n).astype(float)
    score = float(s.sum() / m.sum())
    if n < 2:
        return Interval(score, 0.0, 1.0, "clustered t")
    variance = float(((s - score * m) ** 2).sum()) / m.sum() ** 2 * n / (n - 1)
    half = two_sided_t_quantile(confidence_level, n - 1) * variance ** 0.5
    return Interval(score, max(0.0, score - half), min(1.0, score + half), "clustered t")


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
    fit_requests: int = 0
    confirm_requests: int = 0
    fit_kept_requests: int = 0
    """Requests with at least one row kept at the threshold on the fit split."""
    confirm_kept_requests: int = 0

    @property
    def confirmation(self) -> str | None:
        """The confirm split's reading, from its 95% interval (never the point estimate alone):
        'confirmed' when the whole interval meets the target (lower bound >= target), 'not confirmed' when
        the whole interval is below it (upper bound < target), 'inconclusive' when it straddles the target
        (the confirm half cannot tell the two apart); None when there was nothing to confirm."""
        interval = self.confirm_accuracy
        if interval is None:
            return None
        if interval.low >= self.target_accuracy:
            return "confirmed"
        if interval.high < self.target_accuracy:
            return "not confirmed"
        return "inconclusive"


def find_threshold(confidence: Sequence[float], correct: Sequence[bool], request_ids: Sequence[str],
                   target_accuracy: float, min_kept: int = 10) -> ThresholdFit:
    """Fit the lowest threshold (most coverage) whose kept rows reach ``target_accuracy`` on the 'fit'
    requests, then report accuracy and coverage at that threshold on the 'confirm' requests.

    The threshold is never judged on the rows it was chosen on. Candidate thresholds are the observed
    confidences of the fit split; at least ``min_kept`` requests (not rows: a request's seeds count once)
    must be kept.
    """
    c, y = np.asarray(confidence, float), np.asarray(correct, bool)
    ids = np.asarray(request_ids)
    uniq_ids, inverse_ids = np.unique(ids, return_inverse=True)
    split = np.array([request_split(r) for r in uniq_ids])[inverse_ids] if len(ids) else np.array([], dtype=str)
    fit, confirm = split == "fit", split == "confirm"
    cf, yf = c[fit], y[fit]
    threshold = fit_acc = None
    fit_cov, fit_kept = 0.0, 0
    if cf.size:
        order = np.argsort(-cf, kind="stable")
        hits = np.cumsum(yf[order])
        kept = np.arange(1, cf.size + 1)
        acc = hits / kept
        sorted_c = cf[order]
        ordered_ids = ids[fit][order]
        _, first = np.unique(ordered_ids, return_index=True)
        new_request = np.zeros(cf.size)
        new_request[first] = 1.0
        kept_requests = np.cumsum(new_request)
        # a cut at sorted_c[j] keeps every row with confidence >= it: the last index of a run of ties
        last_of_tie = np.r_[sorted_c[1:] != sorted_c[:-1], True]
        ok = np.flatnonzero(last_of_tie & (acc >= target_accuracy) & (kept_requests >= min_kept))
        if ok.size:
            j = ok[-1]
            threshold, fit_acc, fit_cov = float(sorted_c[j]), float(acc[j]), float(kept[j] / cf.size)
            fit_kept = int(kept_requests[j])
    confirm_acc, confirm_cov, confirm_kept = None, 0.0, 0
    if threshold is not None and confirm.any():
        keep = confirm & (c >= threshold)
        confirm_cov = float(keep.sum() / confirm.sum())
        confirm_acc = _clustered(y.astype(float), keep, inverse_ids, len(uniq_ids))
        confirm_kept = len(np.unique(ids[keep]))
    return ThresholdFit(target_accuracy=target_accuracy, threshold=threshold, fit_accuracy=fit_acc,
                        fit_coverage=fit_cov, fit_rows=int(fit.sum()), confirm_accuracy=confirm_acc,
                        confirm_coverage=confirm_cov, confirm_rows=int(confirm.sum()),
                        fit_requests=len(set(ids[fit].tolist())), confirm_requests=len(set(ids[confirm].tolist())),
                        fit_kept_requests=fit_kept, confirm_kept_requests=confirm_kept)
