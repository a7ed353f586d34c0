"""A task run's figures, read from the views (tasks/surface/views/task_*.sql), with the statistics that have no
closed form in SQL computed by tasks/stats: paired comparisons on the same tasks (over every seed of every task)
and the 2x2 interaction tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tasks.report.unit_outcomes import Interaction, UnitOutcomes, paired
from tasks.report.version_calibration import VersionCalibration, version_calibrations
from tasks.stats.interaction import find_factorials
from tasks.stats.paired import PairedComparison
from warehouse.query import records

if TYPE_CHECKING:
    import duckdb

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
    arm_success: list[dict[str, Any]] = field(default_factory=list)
    """Per arm and version: success over every task with its interval, tokens and cost (task_arm_success)."""
    tool_coverage: list[dict[str, Any]] = field(default_factory=list)
    """Per arm and surface tool: which tools the tasks need, which no task touches, which the agent called
    though no task needs them (task_tool_coverage)."""
    unfilled_arguments: list[dict[str, Any]] = field(default_factory=list)
    """Per arm and argument: calls that failed because the agent could not fill it (task_unfilled_arguments)."""
    comparisons: list[TaskComparisonFigures] = field(default_factory=list)
    interactions: list[Interaction] = field(default_factory=list)
    version_calibrations: list[VersionCalibration] = field(default_factory=list)
    """Comparisons that change only the version: each version's own tasks (unpaired) and the shared ones."""

    def arm(self, name: str) -> dict[str, Any]:
        return next(a for a in self.arms if a["arm"] == name)

    @property
    def baseline_arms(self) -> list[str]:
        return [a["arm"] for a in self.arms if not a["reads_prompt"]]

    def prompt_measures_nothing(self, *arms: str) -> bool:
        """None of these arms' agents reads the prompt: a change of prompt between them measures nothing."""
        reads = {a["arm"]: a["reads_prompt"] for a in self.arms}
        return all(not reads.get(arm, True) for arm in arms)


def load_surface_figures(con: duckdb.DuckDBPyConnection, run_id: str) -> SurfaceFigures:
    import polars as pl  # here: the surface instrument's modules are read by commands that load no figures

    def view(name: str, order: str) -> list[dict[str, Any]]:
        return records(con, f"SELECT * FROM {name} WHERE run_id = ? ORDER BY {order}", [run_id])

    (run,) = records(con, "SELECT * FROM task_experiments WHERE run_id = ?", [run_id])
    arms = view("task_arms", "rung")
    figures = SurfaceFigures(
        run_id=run_id, run=run, arms=arms, success=view("task_success", "taskset_version, slice, rung"),
        tool_counters=view("task_tool_counters", "rung, calls DESC, tool"),
        call_totals=view("task_call_totals", "rung"),
        first_calls=view("task_first_calls", "rung, intent, n DESC, first_tool"),
        side_effects=view("task_side_effects", "rung"), stop_reasons=view("task_stop_reasons", "rung, n DESC"),
        arm_success=view("task_arm_success", "taskset_version, rung"),
        tool_coverage=view("task_tool_coverage", "rung, tool"),
        unfilled_arguments=view("task_unfilled_arguments", "rung, calls DESC, argument"),
    )
    outcomes = UnitOutcomes.read(con, "SELECT arm, task_id AS unit, slice, successes AS correct, trials "
                                      "FROM task_outcomes WHERE run_id = ? ORDER BY arm, task_id", [run_id])
    reads = {a["arm"]: a["reads_prompt"] for a in arms}
    comparisons = view("task_comparisons", "baseline, arm")
    for c in comparisons:
        changed = list(c["changed"])
        nothing = changed == ["prompt"] and not reads.get(c["baseline"], True) and not reads.get(c["arm"], True)
        common = outcomes.aligned([c["baseline"], c["arm"]])
        for slice_ in sorted(common["slice"].unique().to_list()):  # comparisons are per slice, never pooled
            figures.comparisons.append(TaskComparisonFigures(
                c["baseline"], c["arm"], changed, slice_, paired(common.filter(pl.col("slice") == slice_)),
                changed == ["version"], nothing))
    figures.interactions = outcomes.interactions(find_factorials(arms, ARM_RESPECTS))
    figures.version_calibrations = version_calibrations(outcomes, arms, comparisons)
    return figures
