"""Render a Report as terminal text (rich), markdown (a pull-request comment) or self-contained HTML."""

from __future__ import annotations

import html
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tasks.report_tables import Report


def render_terminal(report: Report, console: Console | None = None) -> None:
    console = console or Console()
    for line in report.headline:
        console.print(line, highlight=False)
    for table in report.tables:
        rich_table = Table(title=table.title, title_justify="left", caption=table.note or None)
        for column in table.columns:
            rich_table.add_column(column, overflow="fold")
        for row in table.rows:
            rich_table.add_row(*row)
        console.print(rich_table)


def render_markdown(report: Report) -> str:
    lines = [f"# tooleval report — {report.run_id}", ""] + [f"{line}  " for line in report.headline] + [""]
    for table in report.tables:
        lines += [f"## {table.title}", ""]
        lines.append("| " + " | ".join(table.columns) + " |")
        lines.append("|" + "---|" * len(table.columns))
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table.rows]
        if table.note:
            lines += ["", f"_{table.note}_"]
        lines.append("")
    return "\n".join(lines)


_STYLE = """body{font-family:system-ui,sans-serif;margin:2rem;color:#222}table{border-collapse:collapse;margin:1rem 0}
td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;font-variant-numeric:tabular-nums}
th{background:#f3f3f3}caption{text-align:left;font-weight:600;padding:.5rem 0}"""


def render_html(report: Report) -> str:
    """One file, no external assets: opens from disk offline."""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>tooleval {html.escape(report.run_id)}</title>",
             f"<style>{_STYLE}</style></head><body>", f"<h1>tooleval report — {html.escape(report.run_id)}</h1>"]
    parts += [f"<p>{html.escape(line)}</p>" for line in report.headline]
    for table in report.tables:
        parts.append(f"<table><caption>{html.escape(table.title)}</caption><tr>")
        parts += [f"<th>{html.escape(c)}</th>" for c in table.columns]
        parts.append("</tr>")
        for row in table.rows:
            parts.append("<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>")
        parts.append("</table>")
        if table.note:
            parts.append(f"<p><em>{html.escape(table.note)}</em></p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report_files(report: Report, directory: Path) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": directory / "report.md", "html": directory / "report.html"}
    paths["markdown"].write_text(render_markdown(report))
    paths["html"].write_text(render_html(report))
    return paths
