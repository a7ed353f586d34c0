"""The report's argument tables, laid out to fit 80 columns (the tool first: a long name wraps there):
argument accuracy per slice and rung, the kinds of argument error, the per-parameter errors (which parameter
of which tool goes wrong, and how), each tool's argument accuracy across the rungs and its paired change
between the arms of each comparison (on the requests scored in both), and, beside the confused pairs, the
calls of the right tool with wrong arguments per tool: a pair is fixed in the descriptions, wrong arguments in
the tool's schema (its parameters' names, types, enums and their descriptions).

A run where no row's arguments were scored gets one headline line and no table; an arm x slice (or a tool in a
rung) with nothing scored reads NOT JUDGED, never 0%.
"""

from __future__ import annotations

from typing import Callable

from tasks.report.format import accuracy_cell, change_cells, interval_text, pct_with_fraction, points
from tasks.report.layout import group_starts, in_tables
from tasks.report_types import ReportTable
from tasks.selection.argument_figures import (ArgumentBreakdown, ArgumentFigures, ArgumentLevel, ParameterOutcome,
                                              is_wrong)
from tasks.stats.estimate import Interval

NO_EXPECTED_ARGUMENTS = ("arguments not scored: no expected arguments ({:,} calls of the expected tool "
                         "carried arguments; none of their requests expects any)")
NO_ARGUMENTS_SENT = ("arguments not scored: no arm sent arguments with a call of the expected tool (an offline "
                     "selector picks a tool, never arguments)")
NOT_JUDGED = "NOT JUDGED"
TOP_PARAMETERS = 10
"""Parameter errors listed per rung and slice (the most frequent first)."""
TOP_TOOLS = 8
"""Tools listed per rung and slice in the tool-right, arguments-wrong table."""

OUTCOME_TEXT = {"wrong_value": "wrong value", "missing_required": "missing required",
                "missing_expected_optional": "missing optional", "hallucinated": "hallucinated",
                "wrong_type": "wrong type", "extra_allowed": "extra allowed", "right": "right"}


def argument_headline(arguments: ArgumentBreakdown) -> list[str]:
    """The one line a run without any scored arguments gets, else nothing."""
    if arguments.scored_any:
        return []
    return [NO_EXPECTED_ARGUMENTS.format(arguments.unscored_calls) if arguments.unscored_calls else NO_ARGUMENTS_SENT]


def _share_cell(k: int, n: int, interval) -> str:
    return f"{pct_with_fraction(k, n)}\n{interval_text(interval)}"


def argument_accuracy_table(arguments: ArgumentBreakdown, label: Callable[[str], str]) -> ReportTable:
    rows, levels = [], sorted(arguments.slices, key=lambda x: (x.slice, x.rung))
    for level in levels:
        judged = level.accuracy is not None
        rows.append([level.slice, label(level.arm), str(level.scored), str(level.n_requests),
                     pct_with_fraction(level.right, level.scored) if judged else NOT_JUDGED,
                     interval_text(level.accuracy) if judged else "", str(level.not_scored)])
    return ReportTable(
        title="Argument accuracy by slice and rung (calls of the expected tool)",
        columns=["slice", "rung", "scored", "req", "args right", "95% CI", "not scored"],
        rows=rows, sections=group_starts([x.slice for x in levels]), key="arguments", summary=True,
        wrap=["slice", "rung"],
        note="scored = rows that called the expected tool with arguments, on a request with expected arguments "
             "(also a call breaking the tool's schema: 'invalid' for tool accuracy); args right = every "
             "parameter right (an extra parameter the schema allows is free); 95% CI: Wilson with the request "
             "as the unit; not scored = the other rows (another tool, no arguments, none expected), never "
             "counted right. NOT JUDGED: nothing scored.")


def error_kinds_table(arguments: ArgumentBreakdown, label: Callable[[str], str]) -> ReportTable:
    """Per slice and rung: the scored calls with each kind of parameter error, most frequent first."""
    rows, groups = [], [(kind.slice, kind.arm) for kind in arguments.kinds]
    starts = set(group_starts(groups))
    for i, kind in enumerate(arguments.kinds):
        first = i == 0 or i in starts
        rows.append([kind.slice if first else "", label(kind.arm) if first else "", OUTCOME_TEXT[kind.outcome],
                     str(kind.calls), _share_cell(kind.calls, kind.scored, kind.share), str(kind.n_requests)])
    return ReportTable(
        title="Kinds of argument error by slice and rung (of the scored calls)",
        columns=["slice", "rung", "error", "calls", "of scored", "req"],
        rows=rows, sections=sorted(starts), key="argument-errors", summary=True, wrap=["slice", "rung", "error"],
        note="calls = scored calls with at least one parameter of that kind (a call with two kinds counts "
             "under each); of scored = their share of the rung's scored calls in the slice (95% CI: Wilson, the "
             "request as the unit); req = requests among them. A rung and slice with no error is not listed.")


def _errors(arguments: ArgumentBreakdown, slice_: str) -> list[ParameterOutcome]:
    return [p for p in arguments.parameters if p.slice == slice_ and is_wrong(p.outcome)]


def parameter_error_tables(arguments: ArgumentBreakdown, label: Callable[[str], str]) -> list[ReportTable]:
    """Per slice: each rung's most frequent parameter errors, with their share of the tool's scored calls."""
    tables = []
    judged = {(x.arm, x.slice): x for x in arguments.slices if x.accuracy is not None}
    for slice_ in sorted({s for _, s in judged}):
        errors = _errors(arguments, slice_)
        rows, sections, notes = [], [], []
        for arm in _judged_arms(judged, slice_):
            level, mine = judged[(arm, slice_)], [p for p in errors if p.arm == arm]
            if rows:
                sections.append(len(rows))
            if not mine:
                rows.append([f"no parameter went wrong in {level.scored} scored calls", str(level.rung),
                             "", "", "", ""])
                continue
            for k, p in enumerate(mine[:TOP_PARAMETERS]):
                rows.append([f"{p.tool}: {p.parameter}", str(level.rung) if k == 0 else "", OUTCOME_TEXT[p.outcome],
                             str(p.rows), _share_cell(p.rows, p.scored_rows, p.share), str(p.n_requests)])
            if len(mine) > TOP_PARAMETERS:
                notes.append(f"rung {level.rung}: {len(mine) - TOP_PARAMETERS} more not listed")
        tables.append(ReportTable(
            title=f"Per-parameter errors, slice {slice_}: which parameter of which tool goes wrong, and how",
            columns=["tool: parameter", "rung", "error", "rows", "of tool's calls", "req"],
            rows=rows, sections=sections, key=f"parameter-errors-{slice_}", summary=True,
            wrap=["tool: parameter", "error"],
            note=_rungs(judged, slice_, label) + " rows = scored calls of the tool with that error in the "
                 "parameter; of tool's calls = their share of the tool's scored calls (95% CI: Wilson, the "
                 "request as the unit); req = requests among them. wrong value: fails its matcher; missing "
                 "required / missing optional: not sent (the optional one was expected); hallucinated: the "
                 "schema has no such parameter; wrong type: not the schema's type. Most frequent first, "
                 f"{TOP_PARAMETERS} per rung" + (f" ({'; '.join(notes)})." if notes else ".")))
    return tables


def _judged_arms(judged: dict, slice_: str) -> list[str]:
    """The arms judged in ``slice_``, in rung order."""
    return sorted({a for a, s in judged if s == slice_}, key=lambda a: judged[(a, slice_)].rung)


def _rungs(judged: dict, slice_: str, label: Callable[[str], str]) -> str:
    return "rungs: " + " · ".join(label(a) for a in _judged_arms(judged, slice_)) + "."


def _wrong_share(level: ArgumentLevel) -> Interval:
    """The share of the tool's scored calls with wrong arguments: 1 - argument accuracy, its interval flipped
    (Wilson's interval of 1 - p on the same effective trials)."""
    a = level.accuracy
    return Interval(1 - a.estimate, 1 - a.high, 1 - a.low, a.method, a.n_effective)


def tool_arguments_tables(arguments: ArgumentBreakdown, tools: list[ArgumentLevel],
                          label: Callable[[str], str]) -> list[ReportTable]:
    """Per slice, beside the confused pairs: per tool (``tools``: per-tool argument accuracy), the rows that
    chose another tool and the calls of the tool whose arguments were wrong."""
    tables = []
    judged = {(x.arm, x.slice): x for x in arguments.slices if x.accuracy is not None}
    for slice_ in sorted({s for _, s in judged}):
        rows, sections, last = [], [], None
        for arm in _judged_arms(judged, slice_):
            found = [(t, arguments.wrong_tool.get((arm, slice_, t.tool), 0), t.scored - t.arguments_right)
                     for t in tools if (t.arm, t.slice) == (arm, slice_) and t.tool != "none"]
            shown = sorted((f for f in found if f[1] or f[2]), key=lambda f: (-f[2], -f[1], f[0].tool))[:TOP_TOOLS]
            for k, (t, wrong_tool, wrong) in enumerate(shown):
                if k == 0 and last is not None:
                    sections.append(len(rows))
                last = arm
                rows.append([t.tool, str(t.rung) if k == 0 else "", str(t.n), pct_with_fraction(wrong_tool, t.n),
                             _share_cell(wrong, t.scored, _wrong_share(t)) if t.scored else NOT_JUDGED])
        if not rows:
            continue
        tables.append(ReportTable(
            title=f"Tool right, arguments wrong, slice {slice_}: beside the confused pairs",
            columns=["tool", "rung", "rows", "wrong tool", "right tool, args wrong"],
            rows=rows, sections=sections, key=f"tool-arguments-{slice_}", summary=True, wrap=["tool"],
            note=_rungs(judged, slice_, label) + " rows = rows expecting the tool; wrong tool = another tool or "
                 "none chosen (the confused pairs: a description fix); right tool, args wrong = of the tool's "
                 "scored calls, those with a parameter wrong (95% CI: Wilson, the request as the unit; a schema "
                 f"fix; which parameter, in the per-parameter errors below). Tools with neither are not listed; "
                 f"at most {TOP_TOOLS} per rung, most wrong arguments first. NOT JUDGED: no call of the tool was "
                 "scored."))
    return tables


def _tool_cell(level: ArgumentLevel | None) -> str:
    """'75.0% 6/8' over '40.1–93.4': argument accuracy, then its 95% CI; NOT JUDGED when nothing was scored."""
    if level is None:
        return ""
    if level.accuracy is None:
        return NOT_JUDGED
    return accuracy_cell(level.arguments_right, level.scored, level.accuracy, level.seed_spread)


def per_tool_argument_tables(arguments: ArgumentFigures, arms: list[str], rung_of: Callable[[str], int],
                             label: Callable[[str], str]) -> list[ReportTable]:
    """Per slice (and per four rungs): the tools with a scored call in some rung, their argument accuracy per
    rung."""
    if not arguments.scored:
        return []
    cells: dict[tuple[str, str], dict[str, ArgumentLevel]] = {}
    for level in arguments.tools:
        cells.setdefault((level.slice, level.tool), {})[level.arm] = level
    tables = []
    for slice_ in sorted({s for s, _ in cells}):
        tools = {tool: by_arm for (s, tool), by_arm in sorted(cells.items())
                 if s == slice_ and any(x.scored for x in by_arm.values())}
        if not tools:
            continue
        for k, (part, chunk) in enumerate(in_tables(arms)):
            rows = [[tool, "/".join(str(by_arm[a].n_requests) if a in by_arm else "–" for a in chunk)]
                    + [_tool_cell(by_arm.get(a)) for a in chunk] for tool, by_arm in tools.items()]
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
                     *change_cells(c.paired)] for c in moved]
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


def argument_tables(arguments: ArgumentBreakdown, label: Callable[[str], str]) -> list[ReportTable]:
    """Argument accuracy, the kinds of error and the per-parameter errors (none when nothing was scored)."""
    if not arguments.scored_any:
        return []
    kinds = [error_kinds_table(arguments, label)] if arguments.kinds else []
    return [argument_accuracy_table(arguments, label), *kinds, *parameter_error_tables(arguments, label)]
