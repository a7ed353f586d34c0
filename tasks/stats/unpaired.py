"""An unpaired change: one arm's success on one set of units (tasks or requests) against its success on
another set, each over its own units — what calibrating a new task-set version against the old one needs,
since the new version holds tasks the old one never asked (and may share none).

Each side is a proportion with the unit as the cluster (seeds of one task are correlated): its clustered
Wilson interval (``wilson.py``, the interval of the success and accuracy tables). The difference
``after - before`` takes MOVER's interval from the two (``mover.py``; Newcombe's hybrid score interval when
the versions share no unit, the same machinery as the calibration table's tercile gap). When they share
units the two estimates are positively correlated (a task both versions ask counts on both sides), and
MOVER for correlated estimates (Zou & Donner 2008) takes their correlation from the shared units:

    r = sum_shared e_b e_a / sqrt(sum_before e_b^2 * sum_after e_a^2),   e = k - p m per unit and side,

the correlation of the two ratio estimators' linearised (sandwich) errors over the units of either version.
Disjoint versions give r = 0 (plain MOVER); a new version that only adds units to the old one gives a
large r, and an interval about as narrow as the added units allow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Sequence

from tasks.stats.estimate import CONFIDENCE, Interval
from tasks.stats.mover import mover_difference
from tasks.stats.wilson import clustered_wilson_interval

METHOD = "MOVER (Newcombe) over two unit-clustered Wilson intervals"
METHOD_SHARED = METHOD + ", correlated through the shared units (Zou & Donner)"


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
    correlation: float
    """Correlation of the two estimates through the units both sides hold (0 when none is shared)."""
    change: Interval
    """``after.estimate - before.estimate`` with its MOVER interval."""


def shared_correlation(units_before: Sequence[Hashable], correct_before: Sequence[float],
                       trials_before: Sequence[float], units_after: Sequence[Hashable],
                       correct_after: Sequence[float], trials_after: Sequence[float]) -> float:
    """Correlation of the two sides' success estimates through the units both hold (0 when none is shared or
    a side has no variance)."""
    def residuals(correct: Sequence[float], trials: Sequence[float]) -> list[float]:
        p = sum(float(k) for k in correct) / sum(float(m) for m in trials)
        return [float(k) - p * float(m) for k, m in zip(correct, trials)]

    e_before, e_after = residuals(correct_before, trials_before), residuals(correct_after, trials_after)
    after_of = dict(zip(units_after, e_after))
    shared = sum(e * after_of[u] for u, e in zip(units_before, e_before) if u in after_of)
    scale = math.sqrt(sum(e * e for e in e_before) * sum(e * e for e in e_after))
    return shared / scale if scale > 1e-12 else 0.0


def unpaired_change(units_before: Sequence[Hashable], correct_before: Sequence[float], trials_before: Sequence[float],
                    units_after: Sequence[Hashable], correct_after: Sequence[float], trials_after: Sequence[float],
                    confidence: float = CONFIDENCE) -> UnpairedChange:
    """Per-unit ids, correct seeds and seeds of each side (index i is unit i of that side only; the two
    sides need not hold the same units, nor as many; a unit id on both sides is a shared unit)."""
    if not len(trials_before) or not len(trials_after):
        raise ValueError("each side needs at least one unit")
    before = clustered_wilson_interval(correct_before, trials_before, confidence)
    after = clustered_wilson_interval(correct_after, trials_after, confidence)
    r = shared_correlation(units_before, correct_before, trials_before, units_after, correct_after, trials_after)
    return UnpairedChange(before=before, after=after, units_before=len(trials_before),
                          units_after=len(trials_after), rows_before=int(sum(trials_before)),
                          rows_after=int(sum(trials_after)), correlation=r,
                          change=mover_difference(after, before, METHOD if r == 0 else METHOD_SHARED, r))
