"""A task run's figures, read from the views (warehouse/views/task_*.sql), with the statistics that have no
closed form in SQL computed by tasks/stats: paired comparisons on discordant tasks (exact McNemar, request
bootstrap) and the 2x2 interaction table (additive prediction vs measured)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb

from tasks.stats.interaction import Factorial, InteractionTable, find_factorials, interaction_table
from tasks.stats.paired import PairedComparison, paired_comparison
from warehouse.query import records

ARM_RESPECTS = ("surface_hash", "prompt_hash", "model_id", "agent", "agent_options_hash", "taskset_version")
"""The columns of task_arms an arm is made of (the one-change rule's respects)."""
RESPECT_WORDS = {"surface_hash": "surface", "prompt_hash": "prompt", "model_id": "model", "agent": "agent",
                 "agent_options_hash": "agent options", "taskset_version": "version"}


@dataclass(frozen=True)
class TaskComparisonFigures:
    baseline: str
    arm: str
    changed: list[str]
    slice: str
    """Comparisons are per slice: slices are never averaged together."""
    paired: PairedComparison
    calibration: bool
    """The arms differ only in the task-set version: a change of instrument, not of the agent."""
    measures_nothing: bool
    """The arms differ only in the prompt and the agent does not read prompts (the offline baseline)."""


@dataclass(frozen=True)
class TaskInteraction:
    factorial: Factorial
    table: InteractionTable
    version: str
    slice: str


@dataclass
class SurfaceFigures:
    run_id: str
    run: dict[str, Any]
    """The run's record (``task_experiments``)."""
    arms: list[dict[str, Any]]
    success: list[dict[str, Any]]
    tool_counters: list[dict[str, Any]]
    call_totals: list[dict[str, Any]]
    first_calls: list[dict[str, Any]]
    side_effects: list[dict[str, Any]]
    stop_reasons: list[dict[str, Any]]
    comparisons: list[TaskComparisonFigures] = field(default_factory=list)
    interactions: list[TaskInteraction] = field(default_factory=list)

    def arm(self, name: str) -> dict[str, Any]:
        return next(a for a in self.arms if a["arm"] == name)

    @property
    def baseline_arms(self) -> list[str]:
        return [a["arm"] for a in self.arms if not a["reads_prompt"]]


def _outcomes(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[tuple[str, str], dict[str, tuple[int, int, str]]]:
    """(arm, version) -> task -> (successes, trials, slice)."""
    out: dict[tuple[str, str], dict[str, tuple[int, int, str]]] = {}
    for r in records(con, "SELECT arm, taskset_version, task_id, successes, trials, slice FROM task_outcomes "
                          "WHERE run_id = ?", [run_id]):
        out.setdefault((r["arm"], r["taskset_version"]), {})[r["task_id"]] = (r["successes"], r["trials"], r["slice"])
    return out


def compare(outcomes: dict[str, dict[str, tuple[int, int, str]]], baseline: str, arm: str,
            slice_: str | None) -> PairedComparison | None:
    """Paired comparison of two arms on the tasks both ran (optionally one slice)."""
    a, b = outcomes.get(baseline, {}), outcomes.get(arm, {})
    tasks = sorted(t for t in a.keys() & b.keys() if slice_ is None or a[t][2] == slice_)
    if not tasks:
        return None
    return paired_comparison([a[t][0] for t in tasks], [a[t][1] for t in tasks],
                             [b[t][0] for t in tasks], [b[t][1] for t in tasks])


def interactions(arms: list[dict[str, Any]], outcomes: dict[tuple[str, str], dict[str, tuple[int, int, str]]]
                 ) -> list[TaskInteraction]:
    found = []
    for square in find_factorials(arms, ARM_RESPECTS):
        version = next(a["taskset_version"] for a in arms if a["arm"] == square.baseline)
        names = [square.baseline, square.first, square.second, square.both]
        per_arm = [outcomes.get((name, next(a["taskset_version"] for a in arms if a["arm"] == name)), {})
                   for name in names]
        common = sorted(set.intersection(*(set(p) for p in per_arm)))
        for slice_ in sorted({per_arm[0][t][2] for t in common}):  # slices are never pooled
            tasks = [t for t in common if per_arm[0][t][2] == slice_]
            table = interaction_table([[p[t][0] for t in tasks] for p in per_arm],
                                      [[p[t][1] for t in tasks] for p in per_arm])
            found.append(TaskInteraction(square, table, version, slice_))
    return found


def load_surface_figures(con: duckdb.DuckDBPyConnection, run_id: str) -> SurfaceFigures:
    (run,) = records(con, "SELECT * FROM task_experiments WHERE run_id = ?", [run_id])
    arms = records(con, "SELECT * FROM task_arms WHERE run_id = ? ORDER BY rung", [run_id])
    figures = SurfaceFigures(
        run_id=run_id, run=run, arms=arms,
        success=records(con, "SELECT * FROM task_success WHERE run_id = ? ORDER BY taskset_version, slice, rung", [run_id]),
        tool_counters=records(con, "SELECT * FROM task_tool_counters WHERE run_id = ? ORDER BY rung, calls DESC, tool",
                              [run_id]),
        call_totals=records(con, "SELECT * FROM task_call_totals WHERE run_id = ? ORDER BY rung", [run_id]),
        first_calls=records(con, "SELECT * FROM task_first_calls WHERE run_id = ? ORDER BY rung, intent, n DESC, "
                                 "first_tool", [run_id]),
        side_effects=records(con, "SELECT * FROM task_side_effects WHERE run_id = ? ORDER BY rung", [run_id]),
        stop_reasons=records(con, "SELECT * FROM task_stop_reasons WHERE run_id = ? ORDER BY rung, n DESC", [run_id]),
    )
    outcomes = _outcomes(con, run_id)
    reads = {a["arm"]: a["reads_prompt"] for a in arms}
    version_of = {a["arm"]: a["taskset_version"] for a in arms}
    slices = sorted({r["slice"] for r in figures.success})
    for c in records(con, "SELECT * FROM task_comparisons WHERE run_id = ? ORDER BY baseline, arm", [run_id]):
        changed = list(c["changed"])
        calibration = changed == ["version"]
        nothing = changed == ["prompt"] and not reads.get(c["baseline"], True) and not reads.get(c["arm"], True)
        base, other = outcomes.get((c["baseline"], version_of[c["baseline"]]), {}), \
            outcomes.get((c["arm"], version_of[c["arm"]]), {})
        for slice_ in slices:
            paired = compare({"a": base, "b": other}, "a", "b", slice_)
            if paired is not None:
                figures.comparisons.append(TaskComparisonFigures(c["baseline"], c["arm"], changed, slice_, paired,
                                                                 calibration, nothing))
    figures.interactions = interactions(arms, outcomes)
    return figures
