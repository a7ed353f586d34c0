"""A task run's figures, read from the views (warehouse/views/task_*.sql), with the statistics that have no
closed form in SQL computed by tasks/stats: paired comparisons on discordant tasks (exact McNemar, request
bootstrap) and the 2x2 interaction table (additive prediction vs measured)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb

from tasks.stats.interaction import Factorial, InteractionTable, interaction_table
from tasks.stats.paired import PairedComparison, paired_comparison

ARM_RESPECTS = ("surface_hash", "prompt_hash", "model_id", "agent", "agent_options_hash", "taskset_version")
"""The columns of task_arms an arm is made of (the one-change rule's respects)."""
RESPECT_WORDS = {"surface_hash": "surface", "prompt_hash": "prompt", "model_id": "model", "agent": "agent",
                 "agent_options_hash": "agent options", "taskset_version": "version"}


def records(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


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
class TaskRunFigures:
    run_id: str
    experiment: dict[str, Any]
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


def latest_task_run(con: duckdb.DuckDBPyConnection) -> str | None:
    rows = con.execute("SELECT run_id FROM task_experiments ORDER BY finished_at DESC LIMIT 1").fetchall()
    return rows[0][0] if rows else None


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


def find_squares(arms: list[dict[str, Any]], respects: tuple[str, ...] = ARM_RESPECTS) -> list[Factorial]:
    """Every 2x2 among the arms: a baseline, two arms each changing one respect of it, and the arm changing
    both as they do; each square once, seen from its first arm (in rung order).

    (``tasks.stats.interaction.find_factorials`` does the same for selection arms, but rebinds its baseline
    key inside the loop, so a baseline with a second candidate square fails; this one keeps them apart.)"""
    key = {str(a["arm"]): tuple(a[r] for r in respects) for a in arms}
    by_key = {k: name for name, k in key.items()}
    order = {str(a["arm"]): i for i, a in enumerate(arms)}

    def differs_only(x: tuple, y: tuple, position: int) -> bool:
        return all((p != q) == (n == position) for n, (p, q) in enumerate(zip(x, y)))

    found: list[Factorial] = []
    seen: set[frozenset[str]] = set()
    for base, base_key in key.items():
        for i in range(len(respects)):
            for j in range(i + 1, len(respects)):
                firsts = [name for name, k in key.items() if differs_only(base_key, k, i)]
                seconds = [name for name, k in key.items() if differs_only(base_key, k, j)]
                for first in firsts:
                    for second in seconds:
                        both_key = tuple(key[first][n] if n == i else key[second][n] if n == j else base_key[n]
                                         for n in range(len(respects)))
                        both = by_key.get(both_key)
                        square = frozenset({base, first, second, both or ""})
                        if both is None or square in seen:
                            continue
                        seen.add(square)
                        a, b, ra, rb = first, second, respects[i], respects[j]
                        if order[a] > order[b]:
                            a, b, ra, rb = b, a, rb, ra
                        found.append(Factorial(base, a, b, both, ra, rb))
    return found


def interactions(arms: list[dict[str, Any]], outcomes: dict[tuple[str, str], dict[str, tuple[int, int, str]]]
                 ) -> list[TaskInteraction]:
    found = []
    for square in find_squares(arms):
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


def load_task_figures(con: duckdb.DuckDBPyConnection, run_id: str) -> TaskRunFigures:
    (experiment,) = records(con, "SELECT * FROM task_experiments WHERE run_id = ?", [run_id])
    arms = records(con, "SELECT * FROM task_arms WHERE run_id = ? ORDER BY rung", [run_id])
    figures = TaskRunFigures(
        run_id=run_id, experiment=experiment, arms=arms,
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
