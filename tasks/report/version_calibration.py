"""Calibrating a new task-set version against the old one: the same arm on both versions (a comparison whose
only change is the version), read two ways side by side, per slice (slices are never averaged together).

- **Each version's own units** (tasks, or requests for selection): success over every task of the old
  version against success over every task of the new one, unpaired, with its 95% interval
  (``tasks/stats/unpaired.py``). This is the version calibration the design asks for (e.g. "61% on v1 and
  79% on v2: v2 is 18 points easier"): it carries the difficulty the new version adds.
- **Paired on the shared units**: the paired comparison on the tasks both versions hold (the same figure as
  the paired-comparison table). It says whether the arm scores the tasks both versions ask the same on both,
  and is blind to the tasks the new version adds: v1 plus 5 harder tasks reads equal here.

When the versions share no unit the paired figure is absent and the table says so; the unpaired one is
still there. Both instruments call ``version_calibrations`` with their ``UnitOutcomes`` and build the table
with ``version_calibration_table``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from tasks.report.format import change_span, pct, points
from tasks.report.layout import group_starts
from tasks.report.unit_outcomes import UnitOutcomes, paired
from tasks.report_types import ReportTable
from tasks.stats.paired import PairedComparison
from tasks.stats.unpaired import UnpairedChange, unpaired_change


@dataclass(frozen=True)
class VersionCalibration:
    """One arm on an old and a new version, one slice."""

    baseline: str
    """The arm on the old version."""
    arm: str
    """The same configuration on the new version."""
    old_version: str
    new_version: str
    slice: str
    units_old: int
    """Units (tasks or requests) of the slice the old version holds (that the baseline ran)."""
    units_new: int
    own: UnpairedChange | None
    """Each version's own units, unpaired (None when one version has no unit in this slice)."""
    shared: PairedComparison | None
    """Paired on the units both versions hold (None when they share none in this slice)."""

    @property
    def n_shared(self) -> int:
        return self.shared.n_requests if self.shared is not None else 0


def version_pairs(arms: Sequence[dict[str, Any]], comparisons: Sequence[dict[str, Any]]
                  ) -> list[tuple[str, str, str, str]]:
    """(baseline, arm, old version, new version) of each comparison whose only change is the version."""
    version = {a["arm"]: a["taskset_version"] for a in arms}
    return [(c["baseline"], c["arm"], version[c["baseline"]], version[c["arm"]]) for c in comparisons
            if list(c["changed"]) == ["version"]]


def version_calibrations(outcomes: UnitOutcomes, arms: Sequence[dict[str, Any]],
                         comparisons: Sequence[dict[str, Any]]) -> list[VersionCalibration]:
    """Every version-only comparison, per slice of either side: the unpaired change over each version's own
    units and the paired comparison on the units both hold."""
    import polars as pl  # here: the report's tables and a run's gates read this module without a frame

    found = []
    for baseline, arm, old_version, new_version in version_pairs(arms, comparisons):
        old, new = outcomes.arm(baseline), outcomes.arm(arm)
        common = outcomes.aligned([baseline, arm])
        for slice_ in sorted(set(old["slice"].to_list()) | set(new["slice"].to_list())):
            old_part, new_part = old.filter(pl.col("slice") == slice_), new.filter(pl.col("slice") == slice_)
            own = None
            if old_part.height and new_part.height:
                own = unpaired_change(old_part["unit"].to_list(), old_part["correct"].to_list(),
                                      old_part["trials"].to_list(), new_part["unit"].to_list(),
                                      new_part["correct"].to_list(), new_part["trials"].to_list())
            shared_part = common.filter(pl.col("slice") == slice_)
            found.append(VersionCalibration(
                baseline, arm, old_version, new_version, slice_, old_part.height, new_part.height, own,
                paired(shared_part) if shared_part.height else None))
    return found


def _paired_reading(p: PairedComparison) -> str:
    """Whether the arm scores the shared units differently on the two versions: what the paired CI says."""
    if p.significant:
        return "▼ on shared" if p.change.estimate < 0 else "▲ on shared"
    return "no change shown"


def _reading(c: VersionCalibration) -> str:
    """What the unpaired change says about the new version as an instrument."""
    if c.own is None:
        return "slice in one version only"
    change = c.own.change
    if change.low > 0:
        return f"{c.new_version} easier"
    if change.high < 0:
        return f"{c.new_version} harder"
    return "no shift shown (CI covers 0)"


def version_calibration_table(calibrations: Sequence[VersionCalibration], unit: str = "task") -> ReportTable:
    """Two rows per (comparison, slice): the paired figure on the shared units and the unpaired one over each
    version's own units, each labelled; a note when a comparison shares no unit."""
    units = f"{unit}s"
    rows: list[list[str]] = []
    sections: list[int] = []
    disjoint: list[str] = []
    starts = group_starts([(c.baseline, c.arm) for c in calibrations])
    for i, c in enumerate(calibrations):
        label = f"{c.baseline} → {c.arm}" if i == 0 or i in starts else ""
        if i in starts:
            sections.append(len(rows))
        if c.shared is None:
            rows.append([label, c.slice, f"paired on 0 shared {units}", "nothing shared: no paired figure",
                         "—", "—", ""])
        else:
            p = c.shared
            rows.append([label, c.slice, f"paired on {p.n_requests} shared {unit if p.n_requests == 1 else units}",
                         f"{c.old_version} {pct(p.accuracy_from)} → {c.new_version} {pct(p.accuracy_to)}",
                         points(p.change.estimate) or "0.0", change_span(p.change), _paired_reading(p)])
        old_cell = f"{c.old_version} {pct(c.own.before.estimate) if c.own else '—'} ({c.units_old})"
        new_cell = f"{c.new_version} {pct(c.own.after.estimate) if c.own else '—'} ({c.units_new})"
        rows.append(["", "", f"each version's own {units}", f"{old_cell} → {new_cell}",
                     points(c.own.change.estimate) or "0.0" if c.own else "—",
                     change_span(c.own.change) if c.own else "—", _reading(c)])
        if c.shared is None:
            disjoint.append(f"{c.baseline} → {c.arm} ({c.old_version} → {c.new_version}), slice {c.slice}")
    note = (f"Only the version changes, so a difference is a change of instrument, not of the agent. Paired on "
            f"shared {units}: the {units} both versions hold, each right when right under most of its seeds "
            f"(paired score interval, as in the comparisons); blind to what the new version adds. Each version's "
            f"own {units}: success over every seed of every {unit} of each version ({units} in brackets), "
            f"unpaired; 95% CI: MOVER over the two {unit}-clustered Wilson intervals, correlated through the "
            f"shared {units} (Zou & Donner). harder / easier = that CI excludes 0.")
    if disjoint:
        note += (f" No {unit} in common, so no paired figure: " + "; ".join(disjoint)
                 + f". Only the unpaired figure calibrates {'these versions' if len(disjoint) > 1 else 'it'}.")
    return ReportTable(
        title=f"Calibration of a new task-set version: the same arm, each version's own {units} and the shared ones",
        columns=["comparison", "slice", "figure", "old → new", "Δ pts", "95% CI", "reading"],
        rows=rows, sections=sections, note=note, key="version-calibration", summary=True,
        wrap=["comparison", "figure", "old → new", "reading"])
