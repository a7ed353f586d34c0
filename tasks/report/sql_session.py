"""An analyst's SQL session over a snapshot of the warehouse (``tooleval sql``), and its result tables.

The session reads a private copy of the DuckDB file (``warehouse/snapshot.py``), opened read-only with this
tooleval's views and macros (``open_read_only``), so it never holds the file a run registers into and needs
no DuckDB CLI (the CLIs installable here cannot read a file written by DuckDB 2.0). ``refresh`` takes a new
snapshot. Writes are refused (the copy is read-only); temporary views and tables work.

The session is confined (``confine``) once the snapshot is open and the views are made: no file outside it
can be read or written (COPY, EXPORT DATABASE, read_text/read_csv/glob over paths, ATTACH of any file), no
extension installed or loaded (so no network), and no setting changed afterwards (``lock_configuration``).
Statements of the refused kinds are refused before anything runs, naming the statement and the rule.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb

from tasks.files.input_errors import InputError
from tasks.report.read_only import open_read_only, require_warehouse
from tasks.report.sql_limits import QueryLimits, StatementWatch
from warehouse.connect import WarehouseUnreadable
from warehouse.location import Warehouse
from warehouse.snapshot import Snapshot, SnapshotDir, take_snapshot

STATUS_COLUMNS = (["Count"], ["Success"])
"""What DuckDB answers a statement that returns no rows of its own (CREATE, INSERT, SET, CHECKPOINT, ...): not
shown. Every other result is, whatever the statement's type (a PIVOT is a MULTI statement to DuckDB)."""
REFUSED_TYPES = {
    "ATTACH": "it would attach a database file (the warehouse's own would be written to and held locked against runs)", "DETACH": "it would detach the warehouse snapshot",
    "COPY": "it would write (or read) a file outside the warehouse", "COPY_DATABASE": "it would copy a database",
    "EXPORT": "it would write files outside the warehouse", "LOAD": "it would install or load an extension "
    "(and reach the network to fetch it)", "EXTENSION": "it would change where extensions come from",
}
"""Statement types refused before anything runs, and why."""
RULE = ("tooleval sql is read-only: it reads the warehouse's views and tables from a snapshot; writes, reads "
        "outside the warehouse, ATTACH, extensions and settings are refused")
CONFINEMENT = (
    "SET autoinstall_known_extensions = false", "SET autoload_known_extensions = false",
    "SET allow_community_extensions = false", "SET enable_external_access = false",
    "SET lock_configuration = true",
)
"""Applied, in this order, after the snapshot is open and the views made: the last one freezes the rest."""
MAX_CELL = 48
"""Text cells longer than this are cut with '…' in the table layout (numbers never are)."""


@dataclass
class Result:
    """What one statement returned: column names and rows (``truncated``: more rows existed than were fetched)."""

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False


class SqlError(Exception):
    """A statement DuckDB refused; the message is DuckDB's, first line."""


@dataclass
class SqlSession:
    """A read-only connection to a snapshot of the warehouse, with the current views and macros."""

    warehouse: Warehouse
    snapshots: SnapshotDir = field(default_factory=SnapshotDir)
    snapshot: Snapshot | None = None
    con: duckdb.DuckDBPyConnection | None = None
    limits: QueryLimits = field(default_factory=QueryLimits)
    """Each statement's time and the session's memory (tasks/report/sql_limits.py)."""

    def refresh(self) -> Snapshot:
        """Take a new snapshot of the warehouse file and read from it from now on."""
        db = self.warehouse.db_path
        require_warehouse(db)
        try:
            snapshot = take_snapshot(db, self.snapshots.next_dir())
            con = open_read_only(snapshot.path)
            confine(con, snapshot.path.parent, self.limits)
        except WarehouseUnreadable as error:
            raise InputError.one(str(db), "", "warehouse-readable",
                                 f"not a DuckDB file this tooleval can read ({error})") from None
        if self.con is not None:
            self.con.close()
        self.con, self.snapshot = con, snapshot
        return snapshot

    def run(self, sql: str, max_rows: int | None = None) -> list[Result]:
        """Run every statement of ``sql``; a result for each one that returns rows. Raises SqlError."""
        if self.con is None:
            self.refresh()
        assert self.con is not None
        results = []
        watch = StatementWatch(self.limits)
        try:
            statements = duckdb.extract_statements(sql)
            for statement in statements:  # all checked before any runs
                if statement.type.name in REFUSED_TYPES:
                    raise SqlError(f"{RULE}.\nRefused: {_quote(statement.query)} ({statement.type.name}: "
                                   f"{REFUSED_TYPES[statement.type.name]})")
            for statement in statements:
                with watch.watching(self.con.interrupt):
                    result = self._one(statement, max_rows)
                if result is not None:
                    results.append(result)
        except duckdb.Error as error:
            raise SqlError(watch.stopped_by or _first_line(error, statement.query, self.limits)) from None
        return results

    def _one(self, statement: Any, max_rows: int | None) -> Result | None:
        assert self.con is not None
        cursor = self.con.execute(statement.query)
        if cursor.description is None:
            return None
        columns = [d[0] for d in cursor.description]
        if statement.type.name != "SELECT" and columns in STATUS_COLUMNS:
            cursor.fetchall()
            return None  # CREATE, SET, ...: DuckDB answers with a 'Count' column nobody asked for
        rows = cursor.fetchall() if max_rows is None else cursor.fetchmany(max_rows + 1)
        truncated = max_rows is not None and len(rows) > max_rows
        return Result(columns, rows[:max_rows] if truncated else rows, truncated)

    def relations(self) -> list[tuple[str, str]]:
        """(name, 'view' or 'table') of everything an analyst can query, views first."""
        assert self.con is not None or self.refresh()
        found = self.con.execute(
            "SELECT DISTINCT table_name, CASE WHEN table_type = 'VIEW' THEN 'view' ELSE 'table' END "
            "FROM information_schema.tables ORDER BY 2 DESC, 1").fetchall()
        return [(name, kind) for name, kind in found]

    def close(self) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None
        self.snapshots.__exit__()


def confine(con: duckdb.DuckDBPyConnection, scratch: Path, limits: QueryLimits | None = None) -> None:
    """Close ``con`` off from everything but what it already has open: no file reads or writes outside it, no
    ATTACH of a file, no extension installs or loads (so no network), no settings changed from now on.
    Temporary tables that outgrow memory spill into ``scratch`` (the snapshot's own folder), as far as
    ``limits`` allow; DuckDB's memory and threads are set from them before the settings are locked."""
    spill = scratch / "spill"
    spill.mkdir(exist_ok=True)
    con.execute("SET temp_directory = ?", [str(spill)])
    for setting in (limits or QueryLimits()).settings() + list(CONFINEMENT):
        con.execute(setting)


def _quote(query: str, limit: int = 160) -> str:
    text = " ".join(query.split())
    return "`" + (text if len(text) <= limit else text[:limit - 1] + "…") + "`"


REFUSALS = ("Permission Error", "the configuration has been locked", "disabled by configuration")
"""What DuckDB says when the confinement stops a statement."""


def _first_line(error: BaseException, query: str = "", limits: QueryLimits | None = None) -> str:
    text = str(error).strip()
    if isinstance(error, duckdb.OutOfMemoryException) and limits is not None:
        return limits.memory_message(spilled="max_temp_directory_size" in text)
    if any(mark in text for mark in REFUSALS):
        return f"{RULE}.\nRefused: {_quote(query)} ({text.splitlines()[0]})"
    if "read-only mode" in text or "read only" in text.lower():
        return (f"{RULE}.\nRefused: {_quote(query)} ({text.splitlines()[0]})\n(temporary views and tables work: "
                "CREATE TEMP TABLE ...; nothing is written to the warehouse)")
    return text


def cell_text(value: Any) -> str:
    """A value as the table shows it: NULL, numbers to at most 4 decimals (never cut), lists and dates plainly."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        text = f"{value:.4f}".rstrip("0").rstrip(".")
        return "0" if text in ("-0", "") else text
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(cell_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {cell_text(v)}" for k, v in value.items()) + "}"
    return str(value).replace("\n", " ")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _cut(text: str, limit: int = MAX_CELL) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


MIN_CELL = 10
"""Text cells are cut to no fewer characters than this to fit the width; narrower still, records instead."""


def _text_limit(columns: list[str], texts: list[list[str]], numeric: list[bool], width: int) -> int:
    """The longest text cell that lets the table fit ``width`` (between MIN_CELL and MAX_CELL): text columns
    give way first, numbers and column names never."""
    for limit in range(MAX_CELL, MIN_CELL - 1, -1):
        widths = [max([len(c)] + [len(row[i]) if numeric[i] else min(len(row[i]), limit) for row in texts])
                  for i, c in enumerate(columns)]
        if sum(widths) + 2 * (len(widths) - 1) <= width:
            return limit
    return MAX_CELL


def render_table(result: Result, width: int) -> str:
    """A result as an aligned table (numbers right-aligned); wider than ``width``, one record per block
    instead (column: value lines), so no column is hidden and no number is cut."""
    texts = [[cell_text(v) for v in row] for row in result.rows]
    numeric = [bool(result.rows) and all(_is_number(row[i]) or row[i] is None for row in result.rows)
               for i in range(len(result.columns))]
    limit = _text_limit(result.columns, texts, numeric, width)
    shown = [[t if numeric[i] else _cut(t, limit) for i, t in enumerate(row)] for row in texts]
    widths = [max([len(c)] + [len(row[i]) for row in shown]) for i, c in enumerate(result.columns)]
    footer = f"({len(result.rows):,} row{'s' if len(result.rows) != 1 else ''}" + (
        ", more not shown: add LIMIT or raise --max-rows)" if result.truncated else ")")
    if sum(widths) + 2 * (len(widths) - 1) <= width or len(result.columns) == 1:
        def line(cells: list[str]) -> str:
            return "  ".join(c.rjust(w) if numeric[i] else c.ljust(w)
                             for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
        out = [line(result.columns), "  ".join("─" * w for w in widths)]
        out += [line(row) for row in shown]
        return "\n".join(out + [footer])
    label = max(len(c) for c in result.columns)
    out = []
    for number, row in enumerate(texts, start=1):
        out.append(f"── row {number} " + "─" * max(0, min(width, 60) - 9 - len(str(number))))
        out += [f"{c.ljust(label)}  {v}" for c, v in zip(result.columns, row)]
    return "\n".join(out + [footer])


def render_csv(result: Result) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(result.columns)
    writer.writerows([[_csv_value(v) for v in row] for row in result.rows])
    return buffer.getvalue()


def _csv_value(value: Any) -> Any:
    """Full precision for numbers (a spreadsheet rounds for itself), empty for NULL."""
    if value is None:
        return ""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return value
    return cell_text(value)


def describe_snapshot(snapshot: Snapshot) -> str:
    size = snapshot.size_bytes / 1e6
    return (f"snapshot of {snapshot.source} taken {snapshot.taken_at:%Y-%m-%d %H:%M:%S}Z ({size:,.1f} MB; the file "
            f"was held {snapshot.held_s:.2f} s to copy it): runs registered later are not in it (.refresh)")
