"""Volume-weighted accuracy and change, and the contribution table (share x change) behind them.

Unweighted, a tool counts by its share of the labelled set; weighted, by its share of production
traffic. A tool holding 6% of the set and 31% of traffic that drops 50 points contributes about 3 points
to the unweighted change and about 15.5 to the weighted one: the contribution table shows which tools
make up a weighted regression.

Intervals resample requests within each tool (stratified cluster bootstrap): the set was built with a
count per tool, and each tool's weight is fixed, so only which requests stand for the tool varies.
Tools without a production weight (e.g. 'none') count in the unweighted figures only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from tasks.stats.intervals import BOOTSTRAP_SEED, RESAMPLES, Interval, cluster_bootstrap, percentile_interval


@dataclass(frozen=True)
class ToolContribution:
    """One tool's part in an unweighted and a weighted change."""

    tool: str
    n_requests: int
    set_share: float
    """The tool's share of the compared requests."""
    traffic_share: float | None
    """The tool's share of the traffic of the compared tools (renormalised); None without a weight."""
    raw_weight: float | None
    """The tool's share of all production traffic in the window."""
    accuracy_from: float
    accuracy_to: float
    change: float
    unweighted_contribution: float
    """set_share x change: points this tool adds to the unweighted change."""
    weighted_contribution: float | None
    """traffic_share x change: points this tool adds to the weighted change."""


@dataclass(frozen=True)
class WeightedChange:
    unweighted: Interval
    weighted: Interval | None
    weight_covered: float
    """Raw traffic share of the tools in the weighted change."""
    contributions: list[ToolContribution]


def _strata(tools: Sequence[str]) -> tuple[list[str], np.ndarray]:
    names = sorted(set(tools))
    index = {name: i for i, name in enumerate(names)}
    return names, np.array([index[t] for t in tools], dtype=int)


def _per_tool(weights_matrix: np.ndarray, k: np.ndarray, m: np.ndarray, codes: np.ndarray, n_tools: int) -> np.ndarray:
    """Accuracy per tool per resample: (resamples x tools)."""
    codes = np.asarray(codes, dtype=int)
    onehot = np.zeros((len(codes), n_tools))
    onehot[np.arange(len(codes)), codes] = 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return (weights_matrix @ (onehot * k[:, None])) / (weights_matrix @ (onehot * m[:, None]))


def weighted_change(tools: Sequence[str], correct_from: Sequence[float], trials_from: Sequence[float],
                    correct_to: Sequence[float], trials_to: Sequence[float], weights: Mapping[str, float],
                    resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED) -> WeightedChange:
    """Change from one arm to another on the same requests (index i = one request, labelled tools[i] in
    both arms), unweighted and weighted, with the per-tool contributions and stratified intervals."""
    names, codes = _strata(tools)
    ka, ma = np.asarray(correct_from, float), np.asarray(trials_from, float)
    kb, mb = np.asarray(correct_to, float), np.asarray(trials_to, float)
    n_req = np.bincount(codes, minlength=len(names)).astype(float)
    acc_a = np.bincount(codes, ka, len(names)) / np.bincount(codes, ma, len(names))
    acc_b = np.bincount(codes, kb, len(names)) / np.bincount(codes, mb, len(names))
    change = acc_b - acc_a
    set_share = n_req / n_req.sum()
    raw = np.array([weights.get(t, np.nan) if t in weights else np.nan for t in names], dtype=float)
    has_weight = ~np.isnan(raw)
    covered = float(raw[has_weight].sum())
    traffic = np.where(has_weight, np.nan_to_num(raw) / covered, np.nan) if covered > 0 else np.full(len(names), np.nan)

    tw = np.nan_to_num(traffic)

    def deltas(w, code, ka_, ma_, kb_, mb_):
        delta = _per_tool(w, kb_, mb_, code, len(names)) - _per_tool(w, ka_, ma_, code, len(names))
        return np.column_stack([delta @ set_share, np.nan_to_num(delta) @ tw])

    replicates: list[np.ndarray] = []

    def both(w, *cols):
        replicates.append(deltas(w, *cols))
        return replicates[-1][:, 0]

    unweighted = cluster_bootstrap(both, [codes, ka, ma, kb, mb], float(set_share @ change), resamples, seed,
                                   strata=codes)
    weighted = None
    if covered > 0:
        weighted = percentile_interval(float(tw @ np.nan_to_num(change)), replicates[0][:, 1])
    contributions = [
        ToolContribution(tool=name, n_requests=int(n_req[i]), set_share=float(set_share[i]),
                         traffic_share=None if not has_weight[i] else float(traffic[i]),
                         raw_weight=None if not has_weight[i] else float(raw[i]),
                         accuracy_from=float(acc_a[i]), accuracy_to=float(acc_b[i]), change=float(change[i]),
                         unweighted_contribution=float(set_share[i] * change[i]),
                         weighted_contribution=None if not has_weight[i] else float(traffic[i] * change[i]))
        for i, name in enumerate(names)
    ]
    return WeightedChange(unweighted=unweighted, weighted=weighted, weight_covered=covered,
                          contributions=contributions)


def weighted_accuracy(tools: Sequence[str], correct: Sequence[float], trials: Sequence[float],
                      weights: Mapping[str, float], resamples: int = RESAMPLES,
                      seed: int = BOOTSTRAP_SEED) -> tuple[Interval | None, float]:
    """Traffic-weighted accuracy of one arm over the tools it has requests for, with a stratified
    bootstrap interval; returns (interval or None when no tool has a weight, traffic covered)."""
    names, codes = _strata(tools)
    k, m = np.asarray(correct, float), np.asarray(trials, float)
    acc = np.bincount(codes, k, len(names)) / np.bincount(codes, m, len(names))
    raw = np.array([weights.get(t, 0.0) for t in names], dtype=float)
    covered = float(raw.sum())
    if covered <= 0:
        return None, 0.0
    share = raw / covered
    interval = cluster_bootstrap(
        lambda w, code, k_, m_: np.nan_to_num(_per_tool(w, k_, m_, code, len(names))) @ share,
        [codes, k, m], float(share @ acc), resamples, seed, strata=codes)
    return interval, covered
