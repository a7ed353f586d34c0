"""An unpaired change: one arm's success on one set of units (tasks or requests) against its success on
another set, each over its own units — what calibrating a new task-set version against the old one needs,
since the new version holds tasks the old one never asked (and may share none).

Each side is a proportion with the unit as the cluster (seeds of one task are correlated): its clustered
Wilson interval (``wilson.py``, the interval of the success and accuracy tables). The difference
``after - before`` takes MOVER's interval from the two (Newcombe's hybrid score interval, ``mover.py``),
the same machinery as the calibration table's tercile gap. MOVER treats the two sides as independent: when
the versions share tasks the two estimates are positively correlated and the interval is conservative
(wider than it must be); on disjoint versions it is exact in the independence it assumes. Coverage,
measured by ``benchmarks/version_calibration_coverage.py``, is in README.md ("How to read the numbers").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from tasks.stats.estimate import CONFIDENCE, Interval
from tasks.stats.mover import mover_difference
from tasks.stats.wilson import clustered_wilson_interval

METHOD = "MOVER (Newcombe) over two unit-clustered Wilson intervals"


@dataclass(frozen=True)
class UnpairedChange:
    """``after - before``, each side over its own units."""

    before: Interval
    """Success over every seed of the first set's units, unit-clustered Wilson interval."""
    after: Interval
    units_before: int
    units_after: int
    rows_before: int
    rows_after: int
    change: Interval
    """``after.estimate - before.estimate`` with its MOVER interval."""


def unpaired_change(correct_before: Sequence[float], trials_before: Sequence[float],
                    correct_after: Sequence[float], trials_after: Sequence[float],
                    confidence: float = CONFIDENCE) -> UnpairedChange:
    """Per-unit correct seeds and seeds of each side (index i is unit i of that side only; the two sides
    need not hold the same units, nor as many)."""
    if not len(trials_before) or not len(trials_after):
        raise ValueError("each side needs at least one unit")
    before = clustered_wilson_interval(correct_before, trials_before, confidence)
    after = clustered_wilson_interval(correct_after, trials_after, confidence)
    return UnpairedChange(before=before, after=after, units_before=len(trials_before),
                          units_after=len(trials_after), rows_before=int(sum(trials_before)),
                          rows_after=int(sum(trials_after)), change=mover_difference(after, before, METHOD))
