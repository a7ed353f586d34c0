"""Read production turns from a Parquet file (or a folder of them), a JSON Lines file, a DuckDB table or an
OpenInference trace export, as validated ``ProductionTurn`` records.

The columns are those of ``schemas.traffic.ProductionTurn``; ``turn_id``, ``time``, ``user_message`` and
``first_tool`` are required, the others optional; extra columns are ignored. Parquet and DuckDB sources
filter the window inside DuckDB (the log is never loaded whole); every bad record is reported with its
file, its line (JSONL) or turn id, and the rule.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from schemas.traffic import ProductionTurn, Window
from tasks.files.json_lines import read_json_objects
from tasks.files.input_errors import InputError, Problem
from tasks.traffic.openinference import read_openinference
from tasks.traffic.turn_checks import COLUMNS, MAX_PROBLEMS, validate_turns

FORMATS = ("auto", "parquet", "jsonl", "duckdb", "openinference")
REQUIRED = tuple(name for name, info in ProductionTurn.model_fields.items() if info.is_required())
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")


@dataclass(frozen=True)
class TrafficSource:
    """Where turns come from: a path, its format and (for DuckDB) the table."""

    path: Path
    format: str = "auto"
    table: str = "turns"

    @property
    def name(self) -> str:
        return self.path.name + (f"::{self.table}" if self.resolved_format() == "duckdb" else "")

    def resolved_format(self) -> str:
        if self.format != "auto":
            return self.format
        return detect_format(self.path)


def detect_format(path: Path) -> str:
    """By suffix; a JSON file is sniffed for OpenInference spans (``resourceSpans`` or span ids)."""
    if not path.exists():
        raise InputError.one(str(path), "", "file-exists", "production log not found")
    if path.is_dir() or path.suffix == ".parquet":
        return "parquet"
    if path.suffix in (".duckdb", ".db"):
        return "duckdb"
    if path.suffix in (".jsonl", ".json", ".ndjson"):
        with path.open("rb") as handle:
            first = handle.readline(1_000_000)
        try:
            record = json.loads(first)
        except json.JSONDecodeError:
            return "jsonl"
        if isinstance(record, dict) and ("resourceSpans" in record or "span_id" in record
                                         or "context" in record or "spanId" in record):
            return "openinference"
        return "jsonl"
    raise InputError.one(str(path), "", "traffic-format",
                         "cannot tell the format: use .parquet, .jsonl, .duckdb or give --format")


def _in_window(turns: list[ProductionTurn], window: Window | None) -> list[ProductionTurn]:
    if window is None:
        return turns
    return [t for t in turns if window.start <= t.time < window.end]


# -- DuckDB-backed sources (Parquet, DuckDB table) ------------------------------------------------------

def _duckdb_relation(source: TrafficSource) -> tuple[Any, str]:
    """A connection and the FROM clause for a Parquet or DuckDB source."""
    path = source.path
    if not path.exists():
        raise InputError.one(str(path), "", "file-exists", "production log not found")
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    if source.resolved_format() == "parquet":
        target = str(path / "**" / "*.parquet") if path.is_dir() else str(path)
        return con, f"read_parquet('{target.replace(chr(39), chr(39) * 2)}', union_by_name = true)"
    if not _IDENTIFIER.match(source.table):
        raise InputError.one(str(path), source.table, "table-name", "a table name is letters, digits and '_'")
    try:
        con.execute("ATTACH ? AS traffic_source (READ_ONLY)", [str(path)])
    except duckdb.Error as error:
        raise InputError.one(str(path), "", "duckdb-open", f"cannot open the DuckDB file read-only: {error}") from None
    return con, f"traffic_source.{source.table}"


def _columns(con: Any, relation: str, file: str) -> list[str]:
    try:
        names = [row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()]
    except duckdb.Error as error:
        raise InputError.one(file, "", "traffic-readable", str(error).splitlines()[0]) from None
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        raise InputError.one(file, "", "turn-columns",
                             f"missing column(s) {', '.join(missing)}; a turn has {', '.join(COLUMNS)}")
    return [c for c in COLUMNS if c in names]


def _read_duckdb_backed(source: TrafficSource, window: Window | None) -> list[ProductionTurn]:
    con, relation = _duckdb_relation(source)
    file = str(source.path) + (f" (table {source.table})" if source.resolved_format() == "duckdb" else "")
    try:
        columns = _columns(con, relation, file)
        where, params = "", []
        if window is not None:
            where, params = "WHERE CAST(time AS TIMESTAMPTZ) >= ? AND CAST(time AS TIMESTAMPTZ) < ?", [window.start, window.end]
        table = con.sql(f"SELECT {', '.join(columns)} FROM {relation} {where} ORDER BY time, turn_id",
                        params=params).to_arrow_table()
    finally:
        con.close()
    rows = table.to_pylist()
    return validate_turns(((f"turn {r.get('turn_id')}", r) for r in rows), file)


def newest_turn_time(source: TrafficSource) -> datetime | None:
    """The time of the newest turn in the whole log (to choose the default window)."""
    fmt = source.resolved_format()
    if fmt in ("parquet", "duckdb"):
        con, relation = _duckdb_relation(source)
        try:
            _columns(con, relation, str(source.path))
            value = con.execute(f"SELECT max(CAST(time AS TIMESTAMPTZ)) FROM {relation}").fetchall()[0][0]
        finally:
            con.close()
        return value
    turns = read_turns(source, None)
    return max((t.time for t in turns), default=None)


# -- JSON Lines -----------------------------------------------------------------------------------------

def _read_jsonl(path: Path, window: Window | None) -> list[ProductionTurn]:
    records: list[tuple[str, dict[str, Any]]] = []
    problems: list[Problem] = []
    for number, record in read_json_objects(path, problems, "production log"):
        records.append((f"line {number}", record))
    try:
        turns = validate_turns(records, str(path))
    except InputError as error:
        problems += error.problems
    if problems:
        problems.sort(key=lambda p: int(p.where.split()[1]) if p.where.startswith("line ") else 0)
        raise InputError(problems[:MAX_PROBLEMS])
    return _in_window(turns, window)


def read_turns(source: TrafficSource, window: Window | None) -> list[ProductionTurn]:
    """Every turn of the source inside the window (all turns when ``window`` is None), oldest first."""
    fmt = source.resolved_format()
    if fmt not in FORMATS:
        raise InputError.one(str(source.path), "", "traffic-format", f"unknown format '{fmt}'; one of {FORMATS}")
    if fmt in ("parquet", "duckdb"):
        turns = _read_duckdb_backed(source, window)
    elif fmt == "jsonl":
        turns = _read_jsonl(source.path, window)
    else:
        turns = _in_window(read_openinference(source.path), window)
    return sorted(turns, key=lambda t: (t.time, t.turn_id))
