"""The report's per-tool argument tables, laid out to fit 80 columns: each tool's argument accuracy across the
rungs (as the per-tool accuracy tables), and its paired change between the arms of each comparison, on the
requests whose arguments were scored in both (the interval and reading of the per-tool changes). A tool with
no scored call in a rung reads NOT JUDGED there, never 0%; nothing is printed for a run with no scored call.
"""

from __future__ import annotations

from typing import Callable

from tasks.report.format import (change_span, fraction_if_small, interval_text, p_value, paired_reading, pct,
                                 points)
from tasks.report_types import ReportTable
from tasks.selection.argument_figures import ArgumentFigures, ArgumentLevel

ARMS_PER_TABLE = 4
"""Rungs side by side in the per-tool argument table (more are split over several tables)."""
NOT_JUDGED = "NOT JUDGED"


def _cell(level: ArgumentLevel | None) -> str:
    """'75.0% 6/8' over '40.1–93.4': argument accuracy, then its 95% CI; NOT JUDGED when nothing was scored."""
    if level is None:
        return ""
    if level.accuracy is None:
        return NOT_JUDGED
    fraction = fraction_if_small(level.arguments_right, level.scored)
    text = f"{pct(level.accuracy.estimate)}{' ' + fraction if fraction else ''}\n{interval_text(level.accuracy)}"
    if level.seed_spread > 0:
        text += f"\nspread {100 * level.seed_spread:.1f}"
    return text


def per_tool_argument_tables(arguments: ArgumentFigures, arms: list[str], rung_of: Callable[[str], int],
                             label: Callable[[str], str]) -> list[ReportTable]:
    """Per slice (and per four rungs): the tools with a scored call in some rung, their argument accuracy per
    rung."""
    if not arguments.scored:
        return []
    cells: dict[tuple[str, str], dict[str, ArgumentLevel]] = {}
    for level in arguments.tools:
        cells.setdefault((level.slice, level.tool), {})[level.arm] = level
    chunks = [arms[i:i + ARMS_PER_TABLE] for i in range(0, len(arms), ARMS_PER_TABLE)]
    tables = []
    for slice_ in sorted({s for s, _ in cells}):
        tools = {tool: by_arm for (s, tool), by_arm in sorted(cells.items())
                 if s == slice_ and any(x.scored for x in by_arm.values())}
        if not tools:
            continue
        for k, chunk in enumerate(chunks):
            rows = [[tool, "/".join(str(by_arm[a].n_requests) if a in by_arm else "–" for a in chunk)]
                    + [_cell(by_arm.get(a)) for a in chunk] for tool, by_arm in tools.items()]
            part = f" ({k + 1}/{len(chunks)})" if len(chunks) > 1 else ""
            tables.append(ReportTable(
                title=f"Per-tool argument accuracy, slice {slice_}{part}: accuracy, then its 95% CI",
                columns=["tool", "req"] + [f"rung {rung_of(a)}" for a in chunk], rows=rows,
                key=f"argument-tools-{slice_}-{k + 1}", wrap=["tool"],
                note="rungs: " + " · ".join(label(a) for a in chunk) + ". Of each tool's scored calls (calls of "
                     "the tool on requests with expected arguments), those with every parameter right; 95% CI: "
                     "Wilson, the request as the unit; req = requests with a scored call, per rung in order "
                     "('–' = none). NOT JUDGED: rows expecting the tool, none scored. Tools with no scored call "
                     "in any rung are not listed."))
    return tables


def argument_change_tables(arguments: ArgumentFigures, comparisons: list[dict]) -> list[ReportTable]:
    """Per comparison and slice: the tools whose argument accuracy changed on some request scored in both arms,
    worst first."""
    tables = []
    for comparison in comparisons:
        base, arm = comparison["baseline"], comparison["arm"]
        mine = [c for c in arguments.changes if (c.baseline, c.arm) == (base, arm)]
        for slice_ in sorted({c.slice for c in mine}):
            in_slice = [c for c in mine if c.slice == slice_]
            measured = [c for c in in_slice if c.paired is not None]
            moved = sorted((c for c in measured if c.paired.discordant or abs(c.paired.change.estimate) > 1e-12),
                           key=lambda c: (c.paired.change.estimate, c.tool))
            if not moved:
                continue
            rows = [[c.tool, str(c.paired.n_requests), points(c.paired.change.estimate) or "0.0",
                     change_span(c.paired.change), f"{c.paired.worse} / {c.paired.better}",
                     p_value(c.paired.p_value), paired_reading(c.paired)] for c in moved]
            one_side = sum(c.one_side for c in in_slice)
            tables.append(ReportTable(
                title=f"Per-tool argument changes {base} → {arm}, slice {slice_}, paired",
                columns=["tool", "req", "Δ pts", "95% CI", "worse/better", "p", "reading"],
                rows=rows, key=f"argument-changes-{base}-{arm}-{slice_}", wrap=["tool", "reading"],
                note=f"On the requests whose arguments were scored in both arms; {len(measured) - len(moved)} "
                     "tool(s) where no request changed are not listed"
                     + (f"; {one_side} request(s) scored in one arm only are left out" if one_side else "")
                     + ". worse / better = requests with right arguments on fewer / more of their seeds; CI: "
                     "paired score interval over every seed of every request, as the per-tool changes."))
    return tables
