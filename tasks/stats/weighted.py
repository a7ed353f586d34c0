"""Volume-weighted accuracy and change, and the contribution table (share x change) behind them.

Unweighted, a tool counts by its share of the labelled set; weighted, by its share of production
traffic. A tool holding 6% of the set and 31% of traffic that drops 50 points contributes about 3 points
to the unweighted change and about 15.5 to the weighted one: the contribution table shows which tools
make up a weighted regression.

Intervals of a change: the weighted (or set-share) change is a mean over requests of ``a_i d_i``, where
``d_i`` is the request's change (after - before, its tool's seeds) and ``a_i = share_t n / n_t`` its
tool's weight per request; the paired score interval (``paired_score.py``) is taken on those contrasts
scaled into -1..1 (divided by the largest ``a_i``). Its scale f (how many +-1 changes a request is worth)
is the smaller of two: the one the observed changes show, and the one expected if changes fell on
requests as the weights do. The first alone under-covers when a heavy tool happened to show no change,
the second alone when the change sits in the heaviest tool. A combination of each tool's own interval
(MOVER) is too conservative over many tools (every tool where nothing moved adds its full width). With equal
weights (the unweighted change) this is the plain paired score interval over all the requests. Each
tool's own change keeps its own interval in the contribution table.

Interval of one arm's weighted accuracy: each tool's request-clustered Wilson interval, combined by
MOVER (``mover.py``), which is conservative with many small tools. Tools without a production weight
(e.g. 'none') count in the unweighted figures only.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping, Sequence

from tasks.stats.estimate import CONFIDENCE, Interval
from tasks.stats.mover import mover_sum
from tasks.stats.paired import paired_change_interval
from tasks.stats.paired_score import effective_scale, paired_score_interval
from tasks.stats.wilson import clustered_wilson_interval


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
    interval: Interval | None = None
    """The tool's change with its paired score interval."""


@dataclass(frozen=True)
class WeightedChange:
    unweighted: Interval
    weighted: Interval | None
    weight_covered: float
    """Raw traffic share of the tools in the weighted change."""
    contributions: list[ToolContribution]


def _by_tool(tools: Sequence[str]) -> dict[str, list[int]]:
    index: dict[str, list[int]] = defaultdict(list)
    for i, tool in enumerate(tools):
        index[tool].append(i)
    return dict(sorted(index.items()))


def _weighted_score(groups: dict[str, list[int]], ka: list[float], ma: list[float], kb: list[float],
                    mb: list[float], shares: dict[str, float], confidence: float, method: str) -> Interval:
    """Paired score interval of ``sum_t share_t (change of tool t)`` over the tools in ``shares``."""
    n = sum(len(groups[t]) for t in shares)
    changes, weights, rows = [], [], []
    for tool, share in shares.items():
        ids = groups[tool]
        mean_a = sum(ma[i] for i in ids) / len(ids)
        mean_b = sum(mb[i] for i in ids) / len(ids)
        changes += [kb[i] / mean_b - ka[i] / mean_a for i in ids]
        weights += [share * n / len(ids)] * len(ids)
        rows.append(min(mean_a, mean_b))
    if not changes:
        return Interval(float("nan"), float("nan"), float("nan"), method)
    largest = max(weights)
    if largest <= 0:
        return Interval(0.0, 0.0, 0.0, method)
    smallest = min(a for a in weights if a > 0)
    contrasts = [a * d / largest for a, d in zip(weights, changes)]
    mean = sum(contrasts) / n
    estimate = largest * mean
    # f from what was seen: the contrasts' trinomial variance over their observed variance
    seen = effective_scale(sum(abs(h) for h in contrasts) / n, mean,
                           sum((h - mean) ** 2 for h in contrasts) / max(1, n - 1),
                           min(rows) * largest / smallest)
    # f if the changes fell on requests as the weights do: the seeds' part (from the unweighted changes)
    # x how many requests of the largest weight one request is worth (largest x sum a / sum a^2)
    mean_change = sum(changes) / n
    seeds = effective_scale(sum(abs(d) for d in changes) / n, mean_change,
                            sum((d - mean_change) ** 2 for d in changes) / max(1, n - 1), min(rows))
    spread = largest * sum(weights) / sum(a * a for a in weights)
    interval = paired_score_interval(contrasts, confidence=confidence, scale=min(seen, seeds * spread))
    low, high = max(-1.0, largest * interval.low), min(1.0, largest * interval.high)  # a change of shares
    return Interval(estimate, min(estimate, low), max(estimate, high), method)


def weighted_change(tools: Sequence[str], correct_from: Sequence[float], trials_from: Sequence[float],
                    correct_to: Sequence[float], trials_to: Sequence[float], weights: Mapping[str, float],
                    confidence: float = CONFIDENCE) -> WeightedChange:
    """Change from one arm to another on the same requests (index i = one request, labelled tools[i] in
    both arms), unweighted and weighted, with the per-tool contributions and their intervals."""
    ka, ma = [float(x) for x in correct_from], [float(x) for x in trials_from]
    kb, mb = [float(x) for x in correct_to], [float(x) for x in trials_to]
    groups = _by_tool(tools)
    total = sum(len(ids) for ids in groups.values())
    covered = sum(weights[t] for t in groups if t in weights)
    contributions = []
    for tool, ids in groups.items():
        part = paired_change_interval([ka[i] for i in ids], [ma[i] for i in ids], [kb[i] for i in ids],
                                      [mb[i] for i in ids], confidence)
        acc_a = sum(ka[i] for i in ids) / sum(ma[i] for i in ids)
        acc_b = sum(kb[i] for i in ids) / sum(mb[i] for i in ids)
        share = len(ids) / total
        has_weight = tool in weights and covered > 0
        traffic = weights[tool] / covered if has_weight else None
        contributions.append(ToolContribution(
            tool=tool, n_requests=len(ids), set_share=share, traffic_share=traffic,
            raw_weight=weights[tool] if tool in weights else None, accuracy_from=acc_a, accuracy_to=acc_b,
            change=acc_b - acc_a, unweighted_contribution=share * (acc_b - acc_a),
            weighted_contribution=None if traffic is None else traffic * (acc_b - acc_a), interval=part))
    method = "paired score over requests weighted by {}"
    unweighted = _weighted_score(groups, ka, ma, kb, mb, {c.tool: c.set_share for c in contributions},
                                 confidence, method.format("set share"))
    weighted = None
    if covered > 0:
        weighted = _weighted_score(groups, ka, ma, kb, mb, {c.tool: c.traffic_share for c in contributions
                                                            if c.traffic_share is not None and c.traffic_share > 0},
                                   confidence, method.format("traffic share"))
    return WeightedChange(unweighted=unweighted, weighted=weighted, weight_covered=covered,
                          contributions=contributions)


def weighted_accuracy(tools: Sequence[str], correct: Sequence[float], trials: Sequence[float],
                      weights: Mapping[str, float], confidence: float = CONFIDENCE) -> tuple[Interval | None, float]:
    """Traffic-weighted accuracy of one arm over the tools it has requests for (each tool's clustered
    Wilson interval, combined by MOVER); returns (interval or None when no tool has a weight, traffic
    covered)."""
    groups = _by_tool(tools)
    k, m = [float(x) for x in correct], [float(x) for x in trials]
    covered = sum(weights.get(t, 0.0) for t in groups)
    if covered <= 0:
        return None, 0.0
    parts, shares = [], []
    for tool, ids in groups.items():
        if weights.get(tool, 0.0) <= 0:
            continue
        parts.append(clustered_wilson_interval([k[i] for i in ids], [m[i] for i in ids], confidence))
        shares.append(weights[tool] / covered)
    interval = mover_sum(parts, shares, "MOVER over tools' clustered Wilson intervals")
    return Interval(interval.estimate, max(0.0, interval.low), min(1.0, interval.high), interval.method), covered
