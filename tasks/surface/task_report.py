"""The report of a task run: the verdict, then task success per slice and arm with intervals, the paired
comparisons, the interaction table, the per-tool counters beside the aggregate they hide, the first-call
intent cross-tab, the counters allowed to get worse, and how runs ended. Text for the terminal, markdown
for a pull request; both from the same tables."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas.criteria import Verdict
from tasks.report.text_table import layout_lines, wrap_text
from tasks.report.format import change_span, p_value, pct, pct_with_fraction, points, seeds_text
from tasks.surface.task_figures import RESPECT_WORDS, TaskRunFigures

BASELINE_NOTE = ("{arms} run{s} the offline baseline agent: a lexical router and schema-guided argument filling, "
                 "not an LLM. It does not read prompts, so a comparison that changes only the prompt "
                 "({pairs}) measures nothing for it; point the same arms at a hosted model to measure the prompt.")


@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class TaskReport:
    run_id: str
    experiment: str
    verdict: Verdict | None
    notes: list[str]
    tables: list[Table]


def _n(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else ("—" if value is None else f"{value:.2f}")


def success_table(figures: TaskRunFigures) -> Table:
    table = Table("Task success by slice and arm (slices are never averaged together)",
                  ["version", "slice", "arm", "tasks×seeds", "success", "95% CI", "per seed", "spread"])
    for r in figures.success:
        table.rows.append([r["taskset_version"], r["slice"], r["arm"], f"{r['n_tasks']}×{r['n_seeds']}",
                           pct_with_fraction(r["successes"], r["n"]), f"{pct(r['ci_low'])}–{pct(r['ci_high'])}",
                           seeds_text(r["seed_successes"]), f"{100 * r['seed_spread']:.1f}"])
    table.notes.append("95% CI: Wilson on the effective number of tasks (seeds of one task are correlated); "
                       "spread = max - min over seeds, the noise floor.")
    return table


def comparison_table(figures: TaskRunFigures) -> Table:
    table = Table("Paired comparisons on the same tasks (only discordant tasks carry the test)",
                  ["comparison", "changed", "slice", "from -> to", "change (95% CI)", "worse / better", "McNemar p"])
    for c in figures.comparisons:
        p = c.paired
        flag = " (instrument)" if c.calibration else (" (measures nothing)" if c.measures_nothing else "")
        table.rows.append([f"{c.baseline} -> {c.arm}", ", ".join(c.changed) + flag, c.slice,
                           f"{pct(p.accuracy_from)} -> {pct(p.accuracy_to)}",
                           f"{points(p.change.estimate) or '0.0'} ({change_span(p.change)})",
                           f"{p.worse} / {p.better} of {p.n_requests}", p_value(p.p_value)])
    table.notes.append("A task counts as done in an arm when it succeeded under most of its seeds; worse = done "
                       "before and not after. A comparison that changes only the version calibrates the new "
                       "version (a change of instrument, not of the agent).")
    return table


def interaction_tables(figures: TaskRunFigures) -> list[Table]:
    tables = []
    for found in figures.interactions:
        f, t = found.factorial, found.table
        title = (f"Interaction: {RESPECT_WORDS.get(f.first_respect, f.first_respect)} x "
                 f"{RESPECT_WORDS.get(f.second_respect, f.second_respect)} (version {found.version}), "
                 f"{f.baseline} / {f.first} / {f.second} / {f.both}")
        if not tables or tables[-1].title != title:
            tables.append(Table(title, ["slice", "tasks", "baseline", "effects", "additive prediction", "measured",
                                        "gap (95% CI)"]))
            tables[-1].notes.append("additive prediction = baseline + each change's own effect; a negative gap means "
                                    "the two changes repair an overlapping share of the same failures (sub-additive).")
        table = tables[-1]
        table.rows.append([found.slice, str(t.n_requests), pct(t.baseline),
                           f"{points(t.first_effect) or '0.0'} / {points(t.second_effect) or '0.0'}",
                           pct(t.additive_prediction), pct(t.both),
                           f"{points(t.gap.estimate) or '0.0'} ({change_span(t.gap)})"])
    return tables


def _same_as_earlier(tables: list[Table], table: Table) -> Table:
    """An arm whose table equals an earlier arm's, cell for cell, is printed as one line saying so."""
    for earlier in tables:
        if earlier.rows and earlier.rows == table.rows and earlier.headers == table.headers:
            arm = earlier.title.rsplit("arm ", 1)[-1]
            return Table(table.title, [], [], [f"the same as arm {arm}, row for row"])
    return table


def tool_tables(figures: TaskRunFigures) -> list[Table]:
    tables: list[Table] = []
    totals = {r["arm"]: r for r in figures.call_totals}
    for arm in [a["arm"] for a in figures.arms]:
        rows = [r for r in figures.tool_counters if r["arm"] == arm]
        total = totals.get(arm)
        table = Table(f"Per-tool counters, arm {arm}",
                      ["tool", "calls", "invalid", "invalid rate", "errors", "error rate", "retries",
                       "calls/run where it appears"])
        for r in rows:
            table.rows.append([r["tool"], _n(r["calls"]), _n(r["invalid"]), pct(r["invalid_rate"]), _n(r["errors"]),
                               pct(r["error_rate"]), _n(r["retries"]), f"{r['calls_per_run_with_tool']:.2f}"])
        if total and total["calls"]:
            table.rows.append(["(all tools)", _n(total["calls"]), _n(total["invalid"]), pct(total["invalid_rate"]),
                               _n(total["errors"]), pct(total["error_rate"]), _n(total["retries"]),
                               f"{total['calls_per_run']:.2f}"])
            table.notes.append(
                f"aggregate invalid rate {total['invalid']:,}/{total['calls']:,} = {pct(total['invalid_rate'])}, an "
                f"average over per-tool rates from {pct(total['tool_invalid_min'])} to {pct(total['tool_invalid_max'])}: "
                "it weights each tool by how often it is called and describes none of them.")
        tables.append(_same_as_earlier(tables, table))
    return tables


def first_call_tables(figures: TaskRunFigures) -> list[Table]:
    tables: list[Table] = []
    for arm in [a["arm"] for a in figures.arms]:
        table = Table(f"First call by declared intent, arm {arm}", ["intent", "first tool", "runs", "share of intent"])
        for r in figures.first_calls:
            if r["arm"] == arm:
                table.rows.append([r["intent"], r["first_tool"], f"{r['n']} of {int(r['intent_runs'])}",
                                   pct(r["share_of_intent"])])
        tables.append(_same_as_earlier(tables, table))
    if tables:
        tables[0].notes.append("An intent split close to evenly between two tools means they are interchangeable "
                               "from where the agent stands; a tool taking nearly all of its intent routes.")
    return tables


def side_effect_table(figures: TaskRunFigures) -> Table:
    table = Table("Counters allowed to get worse (gateable in the criteria file)",
                  ["arm", "attempted", "completed", "irreversible", "per 100 attempted", "per 100 completed",
                   "upstream reads", "per run", "per call", "handed to a human"])
    for r in figures.side_effects:
        per_completed = r["irreversible_per_100_completed"]
        table.rows.append([r["arm"], _n(r["attempted"]), _n(r["completed"]), _n(r["irreversible_actions"]),
                           f"{r['irreversible_per_100_attempted']:.1f}",
                           "—" if per_completed is None else f"{per_completed:.1f}", _n(r["upstream_reads"]),
                           f"{r['upstream_reads_per_run']:.2f}",
                           "—" if r["upstream_reads_per_call"] is None else f"{r['upstream_reads_per_call']:.2f}",
                           pct_with_fraction(r["handed_to_human"], r["attempted"])])
    table.notes.append("Irreversible actions per 100 completed runs divide by the runs that met their assertion: "
                       "an arm that completes more tasks reaches more actions legitimately. Upstream reads per call "
                       "show calls that got heavier even when runs got shorter.")
    return table


def stop_table(figures: TaskRunFigures) -> Table:
    reasons = sorted({r["stop_reason"] for r in figures.stop_reasons})
    table = Table("How runs ended", ["arm", *reasons])
    for arm in [a["arm"] for a in figures.arms]:
        counts = {r["stop_reason"]: r["n"] for r in figures.stop_reasons if r["arm"] == arm}
        table.rows.append([arm, *(_n(counts.get(reason, 0)) for reason in reasons)])
    return table


def build_task_report(figures: TaskRunFigures, verdict: Verdict | None) -> TaskReport:
    notes = []
    baseline = figures.baseline_arms
    if baseline:
        pairs = sorted({f"{c.baseline} -> {c.arm}" for c in figures.comparisons if c.measures_nothing})
        notes.append(BASELINE_NOTE.format(arms=", ".join(baseline), s="" if len(baseline) > 1 else "s",
                                          pairs=", ".join(pairs) or "none here"))
    tables = [success_table(figures), comparison_table(figures), *interaction_tables(figures), *tool_tables(figures),
              *first_call_tables(figures), side_effect_table(figures), stop_table(figures)]
    return TaskReport(run_id=figures.run_id, experiment=figures.experiment["experiment"], verdict=verdict,
                      notes=notes, tables=tables)


def _fixed(table: Table, width: int | None = None) -> list[str]:
    """The table as text lines: at its natural width (the report file), or laid out within ``width`` (a
    terminal), where names wrap and figures stay whole (tasks/report/text_table.py)."""
    if not table.headers:
        return _wrapped(f"{table.title}: {' '.join(table.notes)}", width)
    numeric = [i > 0 and bool(table.rows) and all(_numeric(str(row[i])) or not str(row[i]) for row in table.rows)
               for i in range(len(table.headers))]
    rows = [[str(c) for c in row] for row in table.rows]
    lines = [line for line, _ in layout_lines(table.title, table.headers, rows, numeric, width or NATURAL)]
    return lines + [out for note in table.notes for out in _wrapped(note, width)]


NATURAL = 10**6
"""A width no table reaches: the table at its natural width."""


def _wrapped(text: str, width: int | None) -> list[str]:
    """A line as is, or wrapped within ``width`` with its continuation under its first word."""
    if width is None:
        return [text]
    indent = len(text) - len(text.lstrip(" "))
    return [" " * indent + line for line in wrap_text(text.lstrip(" "), max(width - indent, 20))]


def _numeric(text: str) -> bool:
    return bool(text) and (text[0].isdigit() or text[0] in "+-—<") and "->" not in text


def _relative(path: str | None) -> str:
    """A path under the working directory as written from it (reports are read from the checkout)."""
    if not path:
        return ""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path


def verdict_lines(verdict: Verdict | None) -> list[str]:
    if verdict is None:
        return ["VERDICT: NO CRITERIA — the experiment names no criteria file"]
    lines = [f"VERDICT: {verdict.status} — {verdict.reason}"]
    if verdict.criteria_hash:
        lines.append(f"criteria {_relative(verdict.criteria_path)} · sha256 {verdict.criteria_hash[:12]} · registered "
                     f"{verdict.registered_at:%Y-%m-%d %H:%M:%SZ} (before the first call)")
    for gate in verdict.gates:
        mark = {"PASS": "✔", "FAIL": "✘"}.get(gate.status, "·")
        lines.append(f"{mark} {gate.status} {gate.name}: {gate.statement}")
        lines += [f"      {line}" for line in gate.evidence]
    return lines


def render_task_text(report: TaskReport, width: int | None = None) -> str:
    """The report as text: at its natural width (the report file), or within ``width`` columns (a terminal)."""
    lines = [out for line in verdict_lines(report.verdict) for out in _wrapped(line, width)] + [""]
    lines += [out for n in report.notes for out in _wrapped(f"Note: {n}", width)]
    for table in report.tables:
        lines += ["", *_fixed(table, width)]
    return "\n".join(lines) + "\n"


def render_task_markdown(report: TaskReport) -> str:
    status = report.verdict.status if report.verdict else "NO CRITERIA"
    lines = [f"## tooleval tasks: {status} — run `{report.run_id}` ({report.experiment})", ""]
    if report.verdict:
        lines += [f"- **{g.status}** {g.name}: {g.statement}" + (f" — {g.evidence[0]}" if g.evidence else "")
                  for g in report.verdict.gates] + [""]
    lines += [f"> {n}" for n in report.notes]
    for table in report.tables:
        if not table.headers:
            lines += ["", f"**{table.title}**: {' '.join(table.notes)}"]
            continue
        lines += ["", f"**{table.title}**", "", "| " + " | ".join(table.headers) + " |",
                  "|" + "---|" * len(table.headers)]
        lines += ["| " + " | ".join(str(c).replace("|", "/") for c in row) + " |" for row in table.rows]
        lines += [f"*{n}*" for n in table.notes]
    return "\n".join(lines) + "\n"
