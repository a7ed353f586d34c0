"""The report's two types: a plain table (title, columns, rows, note) and the report (verdict, headline,
tables, figures). Every renderer (terminal, markdown, HTML) reads these; each instrument's report builder
writes them (``Instrument.build_report``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # a report read from its kept copy (tasks/report/stored_report.py) imports no pydantic
    from schemas.criteria import Verdict


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
    summary_only: bool = False
    """Shown in the markdown summary only (a digest of other tables), not in the terminal or HTML report."""
    wrap: list[str] = field(default_factory=list)
    """Columns whose text may wrap (at spaces) in a narrow terminal; the others keep one line."""


Chart = Callable[[], str]
"""A chart of the HTML report as HTML (``render.figure_html``), drawn only when the HTML is written."""


@dataclass
class Report:
    run_id: str
    headline: list[str]
    tables: list[ReportTable] = field(default_factory=list)
    verdict: Verdict | None = None
    figures: Any = None
    """The figures behind the tables (the instrument's: what the gates judged)."""
    charts: dict[str, list[Chart]] = field(default_factory=dict)
    """Charts of the HTML report, each drawn after the table whose key it is filed under."""
    title: str = "tooleval"
    """The markdown summary's heading ('tooleval', 'tooleval tasks')."""
