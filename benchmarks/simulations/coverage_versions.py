"""Coverage of the version-calibration interval (tasks/stats/unpaired.py) by simulation, with the model of
``coverage.py``: task success ~ Beta (or 0/1 for a deterministic agent), 3 seeds whose verdicts correlate.

A scenario is one arm run on an old and a new task-set version. The old version holds ``n_old`` tasks
drawn from a population of mean success ``old``; the new one keeps ``kept`` of those tasks (the same
tasks: the same success probabilities, run again) and adds ``added`` tasks from a population of mean
``new``. The true figure is the difference of the two versions' expected success, each over its own
tasks: ``(kept * old + added * new) / (kept + added) - old``. Kinds:

- ``disjoint``: nothing kept (e.g. 61% on v1 and 79% on v2, no task shared);
- ``nested``: every old task kept, a few harder ones added (e.g. v1 plus 5 harder tasks);
- ``overlap``: half kept, as many added.

Used by ``tests/stats/test_version_calibration_interval.py`` (a few cells) and
``benchmarks/version_calibration_coverage.py`` (the grid, the table in docs/numbers.md). numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmarks.simulations.coverage import BAND, Coverage, _accuracies, _verdicts, simulate
from tasks.stats.estimate import Interval
from tasks.stats.mover import mover_difference
from tasks.stats.unpaired import unpaired_change

Side = tuple[np.ndarray, np.ndarray, np.ndarray]
"""(unit ids, correct seeds per unit, seeds per unit) of one version."""


@dataclass(frozen=True)
class VersionScenario:
    kind: str
    """'disjoint', 'nested' or 'overlap' (see the module notes)."""
    n_old: int
    added: int
    old: float
    new: float
    seed_correlation: float = 0.5
    seeds: int = 3
    band: float = BAND
    """Each data set's new-population failure rate is drawn within +-band of the scenario's."""

    @property
    def kept(self) -> int:
        return {"disjoint": 0, "nested": self.n_old, "overlap": self.n_old // 2}[self.kind]

    @property
    def deterministic(self) -> bool:
        return self.seed_correlation >= 1.0

    def label(self) -> str:
        seeds = "deterministic" if self.deterministic else f"seeds vary (corr {self.seed_correlation:g})"
        return (f"{self.kind}: {self.n_old} tasks at {100 * self.old:g}% -> {self.kept} kept + {self.added} "
                f"at {100 * self.new:g}%, {seeds}")

    def draw(self, rng: np.random.Generator) -> tuple[Side, Side, float]:
        new = 1 - (1 - self.new) * rng.uniform(1 - self.band, 1 + self.band)
        p_old = _accuracies(rng, self.n_old, self.old, self.deterministic)
        p_added = _accuracies(rng, self.added, new, self.deterministic)
        p_new = np.concatenate([p_old[:self.kept], p_added])
        ids_old = np.arange(self.n_old)
        ids_new = np.concatenate([ids_old[:self.kept], self.n_old + np.arange(self.added)])
        correlation = 1.0 if self.deterministic else self.seed_correlation
        m_old, m_new = np.full(self.n_old, float(self.seeds)), np.full(len(p_new), float(self.seeds))
        truth = (self.kept * self.old + self.added * new) / (self.kept + self.added) - self.old
        return ((ids_old, _verdicts(rng, p_old, self.seeds, correlation), m_old),
                (ids_new, _verdicts(rng, p_new, self.seeds, correlation), m_new), truth)


def calibration_interval(before: Side, after: Side) -> Interval:
    """The interval the report prints (correlated through the shared tasks)."""
    return unpaired_change(before[0].tolist(), before[1], before[2], after[0].tolist(), after[1], after[2]).change


def independent_interval(before: Side, after: Side) -> Interval:
    """The same two intervals combined as if the versions shared nothing (plain MOVER)."""
    change = unpaired_change(before[0].tolist(), before[1], before[2], after[0].tolist(), after[1], after[2])
    return mover_difference(change.after, change.before)


def run_version(scenario: VersionScenario, replicates: int, seed: int, independent: bool = False) -> Coverage:
    interval = independent_interval if independent else calibration_interval
    method = "version calibration" + (", as if disjoint" if independent else "")
    return simulate(scenario.draw, interval, replicates, seed, scenario.label(), method, scenario.n_old)
