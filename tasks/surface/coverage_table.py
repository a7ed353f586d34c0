"""Tool coverage per surface in the task report (the view task_tool_coverage): which of the surface's tools
the task set needs, which only its negative cases name, which no task touches, which the agent called though
no task needs them, and what the tasks need that the surface does not offer. Arms on the same surface with the
same catalogue and needs share one table (a column of calls per arm) and one line on the first screen, e.g.
"coverage, surface plain (arms A, B): 3 of 5 tools needed by some task; 1 never exercised: broken_report; 1
needed by none but called: list_tickets (calls: A 6, B 3)". An arm most of whose task runs could not be
carried out has its calls NOT MEASURED, never "never called"."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tasks.report.judge import arms_not_carried_out
from tasks.report_types import ReportTable
from tasks.surface.figures import SurfaceFigures
from tasks.surface.gates import task_runs_not_carried_out

LISTED = 8
"""Tool names listed in a first-screen line before 'and N more'."""

ORDER = {"needed": 0, "needed, never called": 1, "called, not needed": 2, "negative case only": 3,
         "never exercised": 4, "not offered": 5}


@dataclass
class SurfaceCoverage:
    """One surface as some arms ran it: its tools (rows of task_tool_coverage) per arm."""

    surface: str
    arms: list[str]
    rows: dict[str, dict[str, dict[str, Any]]]
    """tool -> arm -> its row of task_tool_coverage."""
    unmeasured: dict[str, str]
    """Arms of the group whose calls were not measured, with why."""
    unrecorded: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Arms with task runs landed before their tasks' needs were recorded: (such runs, runs). Coverage is not
    read for them."""

    def first(self, tool: str) -> dict[str, Any]:
        return next(iter(self.rows[tool].values()))

    def measured(self, tool: str) -> list[dict[str, Any]]:
        return [row for arm, row in self.rows[tool].items() if arm not in self.unmeasured]

    def status(self, tool: str) -> str:
        row, measured = self.first(tool), self.measured(tool)
        if not row["offered"]:
            return "not offered"
        called = any(r["calls"] for r in measured)
        if row["tasks_needing"]:
            return "needed" if called or not measured else "needed, never called"
        if called:
            return "called, not needed"
        if row["tasks_forbidding"]:
            return "negative case only"
        return "never exercised" if measured else "needed by none"

    def ordered(self) -> list[str]:
        return sorted(self.rows, key=lambda t: (ORDER.get(self.status(t), 6), -self.first(t)["tasks_needing"],
                                                -sum(r["calls"] for r in self.measured(t)), t))

    @property
    def arm_words(self) -> str:
        return f"arm{'s' if len(self.arms) > 1 else ''} {', '.join(self.arms)}"

    @property
    def offered(self) -> list[str]:
        return [t for t in self.ordered() if self.first(t)["offered"]]


def surface_coverages(figures: SurfaceFigures) -> list[SurfaceCoverage]:
    """The run's surfaces, arms grouped when their surface, catalogue and needs are the same."""
    by_arm: dict[str, dict[str, dict[str, Any]]] = {}
    for row in figures.tool_coverage:
        by_arm.setdefault(row["arm"], {})[row["tool"]] = row
    unmeasured = arms_not_carried_out(task_runs_not_carried_out(figures), "task runs")
    groups: dict[tuple, SurfaceCoverage] = {}
    for arm in [a["arm"] for a in figures.arms if a["arm"] in by_arm]:
        tools = by_arm[arm]
        surface = next(iter(tools.values()))["surface"]
        key = (surface, tuple(sorted((t, r["offered"], r["tasks_needing"], r["tasks_forbidding"])
                                     for t, r in tools.items() if r["offered"] or r["tasks_needing"])))
        group = groups.setdefault(key, SurfaceCoverage(surface, [], {}, {}))
        group.arms.append(arm)
        if arm in unmeasured:
            group.unmeasured[arm] = unmeasured[arm]
        first = next(iter(tools.values()))
        if first["runs_without_needs"]:
            group.unrecorded[arm] = (first["runs_without_needs"], first["runs"])
        for tool, row in tools.items():
            group.rows.setdefault(tool, {})[arm] = row
    return list(groups.values())


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:LISTED])
    return shown + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")


def coverage_line(group: SurfaceCoverage) -> str:
    """The first-screen line of one surface."""
    said = f"coverage, surface {group.surface} ({group.arm_words})"
    if group.unrecorded:
        runs = ", ".join(f"{arm} {n:,} of {total:,}" for arm, (n, total) in group.unrecorded.items())
        return (f"{said}: NOT KNOWN: task runs landed before tooleval recorded what each task needs ({runs}); run "
                "the experiment again to read it")
    offered = group.offered
    needed = [t for t in offered if group.first(t)["tasks_needing"]]
    spare = [t for t in offered if not group.first(t)["tasks_needing"]]
    words = [f"{said}: {len(needed)} of {len(offered)} tools needed by some task"]
    if spare:
        called = sorted((t for t in spare if group.status(t) == "called, not needed"),
                        key=lambda t: (-sum(r["calls"] for r in group.measured(t)), t))
        negative = [t for t in spare if group.status(t) == "negative case only"]
        idle = [t for t in spare if t not in called and t not in negative]
        if negative:
            words.append(f"{len(negative)} only as negative cases (not_called, forbids): {_names(negative)}")
        if idle and len(group.unmeasured) < len(group.arms):
            words.append(f"{len(idle)} never exercised: {_names(idle)}")
        elif idle:
            words.append(f"{len(idle)} needed by none (calls not measured): {_names(idle)}")
        if called:
            per_arm = ", ".join(f"{arm} {sum(group.rows[t][arm]['calls'] for t in called if arm in group.rows[t]):,}"
                                for arm in group.arms if arm not in group.unmeasured)
            words.append(f"{len(called)} needed by none but called: {_names(called)} (calls: {per_arm})")
    silent = [t for t in needed if group.status(t) == "needed, never called"]
    if silent:
        words.append(f"needed but never called: {_names(silent)}")
    missing = [t for t in group.ordered() if not group.first(t)["offered"] and group.first(t)["tasks_needing"]]
    if missing:
        words.append("needed but not offered: " + _names(
            [f"{t} ({group.first(t)['tasks_needing']} task{'s' if group.first(t)['tasks_needing'] > 1 else ''})"
             for t in missing]))
    if group.unmeasured:
        words.append("calls NOT MEASURED for " + ", ".join(f"{arm} ({why})" for arm, why in group.unmeasured.items()))
    return "; ".join(words)


def coverage_lines(figures: SurfaceFigures) -> list[str]:
    return [coverage_line(group) for group in surface_coverages(figures)]


def _tool_name(group: SurfaceCoverage, tool: str) -> str:
    backend = next((r["backend_tool"] for r in group.rows[tool].values() if r["backend_tool"]), None)
    return f"{tool} ({backend})" if backend and backend != tool else tool


def coverage_tables(figures: SurfaceFigures) -> list[ReportTable]:
    """A table per surface: each tool, the tasks that need it, each arm's calls of it (and of those, the calls
    in runs of tasks that do not need it), and its coverage."""
    tables: list[ReportTable] = []
    for i, group in enumerate((g for g in surface_coverages(figures) if not g.unrecorded), start=1):
        n_tasks = max(r["n_tasks"] for arms in group.rows.values() for r in arms.values())
        table = ReportTable(
            f"Tool coverage, surface {group.surface} ({group.arm_words})",
            ["tool", "tasks needing it", "forbidding it", *(f"calls {arm} (not needed)" for arm in group.arms),
             "coverage"], [], key=f"coverage-{i}")
        for tool in group.ordered():
            cells = []
            for arm in group.arms:
                row = group.rows[tool].get(arm)
                if arm in group.unmeasured:
                    cells.append("NOT MEASURED")
                elif row is None or not row["calls"]:
                    cells.append("0")
                else:
                    cells.append(f"{row['calls']:,} ({row['calls_not_needed']:,})")
            first = group.first(tool)
            table.rows.append([_tool_name(group, tool), f"{first['tasks_needing']} of {n_tasks}",
                               str(first["tasks_forbidding"]), *cells, group.status(tool)])
        table.note = "" if tables else (
            "Needed: a task's assertion requires a call of the tool, its wants name it, or its intent (the first-call "
            "label) is the tool; names as this surface offers them (backend name in brackets where a transform "
            "changed it). Not needed: calls made in runs of tasks that do not need the tool (per-tool false "
            "positives). Forbidding it: tasks naming it in not_called or forbids (negative cases; a call of it there "
            "is not needed either); negative case only: no task needs it, some forbid it, no arm called it. Never "
            "exercised: no task needs or forbids it and no arm called it. Not offered: a task needs it, or the agent "
            "called it, but the surface does not offer it. End-state probes (the harness's calls) are no need.")
        if group.unmeasured:
            unmeasured = "; ".join(f"arm {arm}: {why}" for arm, why in group.unmeasured.items())
            table.note += (" " if table.note else "") + f"NOT MEASURED: {unmeasured}."
        tables.append(table)
    return tables
