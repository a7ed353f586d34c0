"""Render a Report as terminal text (tasks/report/terminal.py), a markdown summary (a pull-request comment) or one
self-contained HTML file with inline SVG charts.

All three put the verdict first. The terminal report fits the terminal's width (``COLUMNS`` when set, also
when stdout is not a terminal; else the terminal's own width, or 100 columns for a file or pipe) and never
cuts a figure: names wrap, and a table too wide for the width is split into panels (tasks/report/text_table.py).
It reads without colour (PASS / FAIL and ▲ / ▼ are words and symbols; colour only repeats them). The HTML has no script and no
external asset: it opens from disk, offline.
"""

from __future__ import annotations

import html
import io
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from tasks.files.atomic_write import write_atomic
from tasks.report.terminal import MIN_WIDTH, Terminal, terminal_width, word_spans
from tasks.report.text_table import layout_lines, wrap_text
from tasks.report_types import Report, ReportTable

if TYPE_CHECKING:  # a report read from its kept copy (tasks/report/stored_report.py) imports no pydantic
    from schemas.criteria import Verdict

STATUS_MARK = {"PASS": "✔", "FAIL": "✘", "SKIP": "–", "NOT JUDGED": "?", "NO CRITERIA": "·"}
STATUS_STYLE = {"PASS": "bold green", "FAIL": "bold red", "SKIP": "dim", "NOT JUDGED": "bold yellow",
                "NO CRITERIA": "bold"}


def display_path(path: str | None) -> str:
    """A path relative to the working directory when it lies below it."""
    if not path:
        return "?"
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def verdict_lines(verdict: Verdict | None) -> list[tuple[str, str]]:
    """(text, status) lines of the verdict block, shared by every format."""
    if verdict is None:
        return [("VERDICT: not judged in this view (no verdict recorded)", "NOT JUDGED")]
    lines = [(f"VERDICT: {verdict.status} — {verdict.reason}", verdict.status)]
    if verdict.criteria_hash:
        when = f"{verdict.registered_at:%Y-%m-%d %H:%M:%SZ}" if verdict.registered_at else "?"
        lines.append((f"criteria {display_path(verdict.criteria_path)} · sha256 {verdict.criteria_hash[:12]} · "
                      f"registered {when} (before the run's first result)", ""))
    for gate in verdict.gates:
        lines.append((f"{STATUS_MARK[gate.status]} {gate.status:<4} {gate.name}: {gate.statement}", gate.status))
        lines += [(f"      {line}", "") for line in gate.evidence]
    return lines


SUMMARY_LABEL = 15
"""Width of a summary line's label (``verdict:       ``): continuation lines are indented as far."""


def summary_lines(label: str, text: str, width: int | None = None) -> list[str]:
    """A run's summary line (``label`` then ``text``) folded to the terminal's width, the text's later
    lines under its first (paths and URLs are broken only when longer than a line)."""
    from tasks.report.text_table import wrap_text

    width = width or terminal_width()
    head = f"{label:<{SUMMARY_LABEL - 1}} " if label else ""
    indent = len(head)
    folded = wrap_text(text, max(width - indent, 20))
    return [head + folded[0]] + [" " * indent + line for line in folded[1:]]


def print_summary_line(label: str, text: str) -> None:
    """``summary_lines`` printed (and flushed: a wait may follow)."""
    print("\n".join(summary_lines(label, text)), flush=True)


def terminal_console() -> Terminal:
    """Standard output at ``terminal_width()``."""
    return Terminal()


def _numeric(column: list[str]) -> bool:
    """A column of figures (right-aligned): most cells are numbers, percentages, intervals or counts."""
    cells = [c for c in column if c and c != "—"]
    figures = [c for c in cells if not re.search(r"[A-Za-z_]", re.sub(r"\bto\b", "", c))]
    return bool(cells) and len(figures) >= 0.7 * len(cells)


def numeric_columns(table: ReportTable) -> list[bool]:
    """Which of the table's columns hold figures (the first, a name, never does)."""
    return [i > 0 and _numeric([row[i] for row in table.rows if i < len(row)]) for i in range(len(table.columns))]


READING_STYLE = {"▼ drop": "red", "▲ gain": "green"}


def table_lines(table: ReportTable, width: int) -> list[tuple[str, str]]:
    """The table as (line, kind) pairs within ``width``: figure columns right-aligned and never cut. A table
    without columns is a line (its title and note: 'the same as arm A, row for row') and its rows' first cells."""
    if not table.columns:
        title = f"{table.title}: {table.note}" if table.note and not table.rows else table.title
        return ([(line, "title") for line in wrap_text(title, width)]
                + [(f"  - {line}" if k == 0 else f"    {line}", "row") for row in table.rows
                   for k, line in enumerate(wrap_text(row[0], width - 4))]
                + ([(line, "note") for line in wrap_text(table.note, width)] if table.note and table.rows else []))
    return layout_lines(table.title, table.columns, table.rows, numeric_columns(table), width, table.sections,
                        table.note)


def print_table(table: ReportTable, console: Terminal) -> None:
    for line, kind in table_lines(table, max(console.width, MIN_WIDTH)):
        spans = []
        if kind == "row":
            spans = word_spans(line, READING_STYLE)
            if line.startswith("["):
                spans.append((0, line.find("]") + 1, "bold"))
        console.print(line, "bold" if kind == "title" else ("dim" if kind == "note" else ""), spans)


def render_verdict(verdict: Verdict | None, console: Terminal) -> None:
    for text, status in verdict_lines(verdict):
        style = STATUS_STYLE.get(status, "") if (text.startswith("VERDICT") or not text.startswith(" ")) else ""
        print_indented(console, text, style)


def print_indented(console: Terminal, text: str, style: str = "") -> None:
    """A line that wraps at words within the console's width, its continuation lines under its first word."""
    indent = len(text) - len(text.lstrip(" "))
    for k, line in enumerate(wrap_text(text.lstrip(" "), max(console.width, MIN_WIDTH) - indent)):
        console.print(" " * indent + line, style if k == 0 or not indent else "")


def render_terminal(report: Report, console: Terminal | None = None) -> None:
    console = console or terminal_console()
    render_verdict(report.verdict, console)
    console.print()
    for line in report.headline:
        print_indented(console, line)
    for table in report.tables:
        if not table.summary_only:
            console.print()
            print_table(table, console)


def render_text(report: Report, width: int | None = None) -> str:
    """The terminal report as plain text, ``width`` columns wide (default: the terminal's width)."""
    buffer = io.StringIO()
    render_terminal(report, Terminal(file=buffer, width=width or terminal_width(), colour=False))
    return buffer.getvalue()


def markdown_table(table: ReportTable, heading: str = "**{}**") -> list[str]:
    """The one markdown writer of a table: the title set in ``heading``, the header (figure columns
    right-aligned), the rows, the note. A table without columns is a list of its rows' first cells."""
    lines = [heading.format(table.title), ""]
    if table.columns:
        lines += ["| " + " | ".join(table.columns) + " |",
                  "|" + "".join("---:|" if numeric else "---|" for numeric in numeric_columns(table))]
        lines += ["| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in row) + " |"
                  for row in table.rows]
    else:
        lines += [f"- {row[0]}" for row in table.rows]
    if table.note:
        lines += ["", f"<sub>{table.note}</sub>"]
    return lines + [""]


def markdown_document(title: str, headline: list[str], tables: list[ReportTable]) -> str:
    """A standalone markdown file: a title, the headline lines, then each table under its own heading."""
    lines = [f"# {title}", "", *[f"{line}  " for line in headline], ""]
    for table in tables:
        lines += markdown_table(table, heading="## {}")
    return "\n".join(lines)


def render_markdown(report: Report, html_path: str | None = None) -> str:
    """A summary for a pull-request comment: verdict and gate evidence, then the summary tables."""
    verdict = report.verdict
    status = verdict.status if verdict else "NOT JUDGED"
    lines = [f"## {report.title}: {STATUS_MARK.get(status, '')} {status} — run `{report.run_id}`", ""]
    if verdict is not None and verdict.reason:  # what the terminal's and the HTML's VERDICT line say after the status
        lines += [verdict.reason, ""]
    for text, line_status in verdict_lines(verdict)[1:]:
        if text.startswith("      "):
            lines.append(f"  - {text.strip()}")
        elif line_status:  # the gate's line without its mark and status ('NOT JUDGED' is two words)
            mark = f"{STATUS_MARK.get(line_status, '')} {line_status:<4} "
            lines.append(f"- **{line_status}** {text.removeprefix(mark)}")
        else:
            lines.append(f"_{text}_")
    lines += ["", *[f"{line}  " for line in report.headline], ""]
    for table in report.tables:
        if table.summary or table.summary_only:
            lines += markdown_table(table)
    if html_path:
        lines.append(f"Full report (every table, with its charts): `{html_path}`")
    return "\n".join(lines) + "\n"


_STYLE = """body{font-family:system-ui,sans-serif;margin:2rem;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}
td,th{border:1px solid #ccc;padding:.2rem .45rem;text-align:left;font-variant-numeric:tabular-nums;vertical-align:top}
td.num{text-align:right}th{background:#f3f3f3}caption{text-align:left;font-weight:600;padding:.4rem 0}
tr.section td{background:#fafafa;font-weight:600}.note{color:#555;font-size:.9em;margin-top:-1rem}
.verdict{border:3px solid #333;padding:.6rem 1rem;margin:1rem 0}.verdict h2{margin:.2rem 0}
.PASS{color:#006b3c}.FAIL{color:#b00020}.SKIP{color:#666}.NOTJUDGED{color:#8a5a00}
.gate{margin:.4rem 0}.evidence{margin:.1rem 0 .1rem 2.2rem;font-size:.92em}
.drop{color:#b00020}.gain{color:#006b3c}small{color:#555}figure{margin:1rem 0}
figcaption{font-size:.9em;color:#444}details{margin:.5rem 0}summary{cursor:pointer;font-weight:600}"""


def _html_table(table: ReportTable) -> str:
    numeric = numeric_columns(table)
    parts = [f"<table id='{html.escape(table.key)}'><caption>{html.escape(table.title)}</caption><tr>"]
    parts += [f"<th>{html.escape(c)}</th>" for c in table.columns]
    parts.append("</tr>")
    for row in table.rows:
        if row and row[0].startswith("[") and not any(row[1:]):
            parts.append(f"<tr class='section'><td colspan='{len(table.columns)}'>{html.escape(row[0])}</td></tr>")
            continue
        cells = []
        for i, cell in enumerate(row):
            klass = ["num"] if numeric[i] else []
            if cell == "▼ drop":
                klass.append("drop")
            elif cell == "▲ gain":
                klass.append("gain")
            attr = f" class='{' '.join(klass)}'" if klass else ""
            cells.append(f"<td{attr}>{html.escape(cell).replace(chr(10), '<br><small>') + ('</small>' if chr(10) in cell else '')}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</table>")
    if table.note:
        parts.append(f"<p class='note'>{html.escape(table.note)}</p>")
    return "".join(parts)


def _html_verdict(verdict: Verdict | None) -> str:
    lines = verdict_lines(verdict)
    status = verdict.status if verdict else "NOT JUDGED"
    parts = [f"<section class='verdict'><h2 class='{status.replace(' ', '')}'>{html.escape(lines[0][0])}</h2>"]
    for text, line_status in lines[1:]:
        if text.startswith("      "):
            parts.append(f"<div class='evidence'>{html.escape(text.strip())}</div>")
        elif line_status:
            parts.append(f"<div class='gate {line_status.replace(' ', '')}'><b>{html.escape(text)}</b></div>")
            gate = next((g for g in (verdict.gates if verdict else []) if f" {g.name}: " in text), None)
            if gate is not None and gate.why:
                parts.append(f"<div class='evidence'><i>why: {html.escape(gate.why)}</i></div>")
        else:
            parts.append(f"<p><small>{html.escape(text)}</small></p>")
    parts.append("</section>")
    return "".join(parts)


def figure_html(svg: str, caption: str) -> str:
    """A chart and its caption, as the HTML report shows them."""
    return f"<figure>{svg}<figcaption>{html.escape(caption)}</figcaption></figure>"


def render_html(report: Report) -> str:
    """One file, no script, no external assets: opens from disk offline."""
    title = f"tooleval report — {report.run_id}"
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             f"<style>{_STYLE}</style></head><body>", f"<h1>{html.escape(title)}</h1>",
             _html_verdict(report.verdict)]
    parts += [f"<p>{html.escape(line)}</p>" for line in report.headline]
    for table in report.tables:
        if table.summary_only:
            continue
        parts.append(_html_table(table))
        parts += [chart() for chart in report.charts.get(table.key, [])]
    parts.append("</body></html>")
    return "\n".join(parts)


def report_files(directory: Path) -> dict[str, Path]:
    """Where a run's reports are (``reports/<run_id>``): format -> file."""
    return {"markdown": directory / "report.md", "html": directory / "report.html"}


def write_report_files(report: Report, directory: Path) -> dict[str, Path]:
    """``report.html`` and ``report.md`` in ``directory``, each replaced whole (a reader never sees a part)."""
    paths = report_files(directory)
    write_atomic(paths["html"], render_html(report))
    write_atomic(paths["markdown"], render_markdown(report, str(paths["html"])))
    return paths
