"""The report's two types: a plain table (title, columns, rows, note) and the report (verdict, headline,
tables, figures). Every renderer (terminal, markdown, HTML) reads these; every builder writes them."""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.criteria import Verdict
from tasks.report.figures import RunFigures


@dataclass
class ReportTable:
    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    key: str = ""
    """Stable id of the table (for the HTML anchors and tests)."""
    sections: list[int] = field(default_factory=list)
    """Row indexes that start a new group (rendered as a rule or a header row)."""
    summary: bool = False
    """Shown in the markdown summary for a pull-request comment."""
    wrap: list[str] = field(default_factory=list)
    """Columns whose text may wrap (at spaces) in a narrow terminal; the others keep one line."""


@dataclass
class Report:
    run_id: str
    headline: list[str]
    tables: list[ReportTable] = field(default_factory=list)
    verdict: Verdict | None = None
    figures: RunFigures | None = None
    """The figures behind the tables (the HTML charts draw from them)."""
