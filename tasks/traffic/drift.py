"""Drift: how far the eval set's label mix is from the production mix, and how far the production mix
moved since the previous window.

Total variation distance (half the summed absolute differences of shares, 0 = same mix, 1 = disjoint)
over the tools, 'none' left out of the shares on both sides: a tool's share is its share of the turns (or
requests) that call a tool, the same figure as its production weight and the run report's "traffic".
'none' is stated apart, as its share of all turns and of all requests. The weighted rollups already correct accuracy for the mix; drift says whether the
set still *covers* the traffic: a tool with real volume and few requests is measured loosely.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from schemas.catalogue import NONE_LABEL
from schemas.taskset import LabelledRequest, ProductionWeights


@dataclass(frozen=True)
class DriftRow:
    tool: str
    production_share: float
    other_share: float
    other_count: int

    @property
    def difference(self) -> float:
        return self.other_share - self.production_share


@dataclass(frozen=True)
class MixDrift:
    """The production mix against another mix (an eval-set version, or an earlier window)."""

    against: str
    tvd: float
    rows: list[DriftRow] = field(default_factory=list)
    """Every tool of either mix, largest absolute difference first."""
    production_none: float | None = None
    """'none' (no tool called) as a share of all production turns; None when not known (weights files)."""
    other_none: float | None = None
    """'none' as a share of all requests of the other mix (an eval set's requests labelled 'none')."""

    def thin_tools(self, min_share: float = 0.01, min_count: int = 10) -> list[DriftRow]:
        """Tools with at least ``min_share`` of production and fewer than ``min_count`` requests in the set."""
        return [r for r in self.rows if r.production_share >= min_share and r.other_count < min_count]


def shares(counts: dict[str, int]) -> dict[str, float]:
    total = sum(counts.values())
    return {k: v / total for k, v in counts.items()} if total else {}


def compare(production: dict[str, int], other: dict[str, int], against: str) -> MixDrift:
    p, q = shares(production), shares(other)
    tools = sorted(set(p) | set(q))
    rows = [DriftRow(tool=t, production_share=p.get(t, 0.0), other_share=q.get(t, 0.0), other_count=other.get(t, 0))
            for t in tools]
    rows.sort(key=lambda r: (-abs(r.difference), r.tool))
    return MixDrift(against=against, tvd=0.5 * sum(abs(r.difference) for r in rows), rows=rows)


def _without_none(counts: dict[str, int]) -> tuple[dict[str, int], float]:
    total = sum(counts.values())
    return {t: n for t, n in counts.items() if t != NONE_LABEL}, (counts.get(NONE_LABEL, 0) / total if total else 0.0)


def eval_set_drift(production_counts: dict[str, int], requests: tuple[LabelledRequest, ...], version: str) -> MixDrift:
    """Production turns per first tool against the version's labels, over the tools ('none' stated apart)."""
    production, production_none = _without_none(production_counts)
    labels, labels_none = _without_none(dict(Counter(r.expected for r in requests)))
    drift = compare(production, labels, f"eval set {version}")
    return MixDrift(drift.against, drift.tvd, drift.rows, production_none, labels_none)


def window_drift(current: ProductionWeights, previous: ProductionWeights) -> MixDrift:
    """This window's tool shares against an earlier window's (both without 'none')."""
    scale = 1_000_000
    return compare({t: round(s * scale) for t, s in current.weights.items()},
                   {t: round(s * scale) for t, s in previous.weights.items()}, f"window {previous.window}")
