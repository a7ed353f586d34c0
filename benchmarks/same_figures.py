"""Do two builds of tooleval give the same figures? Dump what a warehouse's runs say, then diff two dumps.

    python benchmarks/same_figures.py dump WAREHOUSE_DIR before.json   # after `make demo` + `make demo-tasks`
    python benchmarks/same_figures.py dump OTHER_WAREHOUSE_DIR after.json
    python benchmarks/same_figures.py diff before.json after.json      # exit 0 when every figure is the same

A dump holds, for every registered run (selection and task runs, found by experiment name):
- every view's and table's rows for the run, sorted, with what differs between two honest runs masked:
  run ids, times (started, finished, registered, judged) and wall-clock durations (latency, wall, agent and
  backend milliseconds, and the figures derived from them);
- every table of the run's report (title, columns, rows), read from the report files of whichever layout the
  build wrote (report.html, or the surface instrument's older tasks_report.md);
- the verdict: its status, reason and every gate's status, statement and evidence.

Used to check a redesign (one core for both instruments) against the build before it: run both
demos into a fresh warehouse with each build, dump each, diff. Reads only files and the DuckDB file (with
the DuckDB of the environment running it), never the code of either build.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import duckdb

VOLATILE_COLUMN = re.compile(r"(^run_id$|_at$|latency|_ms$|wall|^p\d\d|seconds|^cache_hit$)")
"""Columns whose values differ between two honest runs of the same experiment (which of a task run's arms
finds an outcome in the cache first depends on which unit finishes first)."""
RELATIVE_TOLERANCE = 1e-6
"""Floats are the same when they agree to this share: the trained selector's MiniLM embeddings are not
bit-reproducible on a CPU, so two runs of the same build differ around the 8th digit of its probabilities and
of the calibration figures made from them (a printed figure has 3 or 4)."""
ABSOLUTE_TOLERANCE = 1e-6
"""...or to this much (a bound near 0 moves by more than its share): a millionth of a point of a percentage."""
SORT_DIGITS = 4
"""Rows are sorted on their exact values, then on their floats cut to this many digits: noise never reorders them."""
RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}")
TIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?Z?")


def _masked(value: Any) -> Any:
    if isinstance(value, str):
        return TIME.sub("<time>", RUN_ID.sub("<run>", value))
    if isinstance(value, float):
        return value
    if isinstance(value, (list, tuple)):
        return [_masked(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _masked(v) for k, v in value.items()}
    return value if value is None or isinstance(value, (int, bool)) else str(value)


def _rows(con: duckdb.DuckDBPyConnection, relation: str, run_id: str) -> list[list[Any]]:
    cursor = con.execute(f"SELECT * FROM {relation} LIMIT 0")
    names = [d[0] for d in cursor.description]
    if "run_id" not in names:
        return []
    kept = sorted(n for n in names if not VOLATILE_COLUMN.search(n))  # by name: a table's column order may differ
    if not kept:
        return []
    columns = ", ".join(f'"{n}"' for n in kept)
    rows = con.execute(f"SELECT {columns} FROM {relation} WHERE run_id = ?", [run_id]).fetchall()
    if not rows:
        return []
    return [kept] + sorted(([_masked(v) for v in row] for row in rows), key=_sort_key)


def _coarse(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.{SORT_DIGITS}g}")
    if isinstance(value, list):
        return [_coarse(v) for v in value]
    if isinstance(value, dict):
        return {k: _coarse(v) for k, v in value.items()}
    return value


def _sort_key(row: list[Any]) -> str:
    """The row's exact values first (floats, maps and lists of floats left out), then its floats cut short."""
    exact = [v for v in row if not isinstance(v, (float, dict, list))]
    return json.dumps([exact, _coarse(row)], default=str, sort_keys=True)


def same(a: Any, b: Any) -> bool:
    """Equal values, floats within the relative tolerance (lists, dicts and rows compared item by item)."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(
            a, b, rel_tol=RELATIVE_TOLERANCE, abs_tol=ABSOLUTE_TOLERANCE)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


class _HtmlTables(HTMLParser):
    """Tables of a report.html: caption, header cells, row cells."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict[str, Any]] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._caption: list[str] | None = None
        self._note: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "p" and ("class", "note") in attrs and self.tables:
            self._note = []
        elif tag == "table":
            self.tables.append({"title": "", "columns": [], "rows": []})
        elif tag == "caption":
            self._caption = []
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "p" and self._note is not None:
            if not self.tables[-1]["columns"] and not self.tables[-1]["rows"]:  # a table that is a line
                self.tables[-1]["rows"] = [["".join(self._note)]]
            self._note = None
        elif tag == "caption" and self._caption is not None:
            self.tables[-1]["title"] = "".join(self._caption).strip()
            self._caption = None
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(("th:" if tag == "th" else "") + "".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None and self.tables:
            if self._row and all(c.startswith("th:") for c in self._row):
                self.tables[-1]["columns"] = [c[3:] for c in self._row]
            elif self._row:
                self.tables[-1]["rows"].append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        for part in (self._cell, self._caption, self._note):
            if part is not None:
                part.append(data)


def html_tables(text: str) -> list[dict[str, Any]]:
    parser = _HtmlTables()
    parser.feed(text)
    return parser.tables


def markdown_tables(text: str) -> list[dict[str, Any]]:
    """Tables of the surface instrument's older tasks_report.md: a **title** line, a header row, a rule, rows."""
    tables: list[dict[str, Any]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("**") and "**: " in line:  # "**title**: the same as arm X, row for row"
            title, note = line[2:].split("**: ", 1)
            tables.append({"title": title, "columns": [], "rows": [[note]]})
            continue
        if not (line.startswith("**") and line.endswith("**")):
            continue
        title = line.strip("*")
        if i + 3 < len(lines) and lines[i + 2].startswith("|") and lines[i + 3].startswith("|-"):
            columns = [c.strip() for c in lines[i + 2].strip("|").split(" | ")]
            rows, j = [], i + 4
            while j < len(lines) and lines[j].startswith("| "):
                rows.append([c.strip() for c in lines[j][2:-2].split(" | ")])
                j += 1
            tables.append({"title": title, "columns": columns, "rows": rows})
    return tables


def report_tables(folder: Path) -> list[dict[str, Any]]:
    if (folder / "report.html").is_file():
        return html_tables((folder / "report.html").read_text())
    if (folder / "tasks_report.md").is_file():
        return markdown_tables((folder / "tasks_report.md").read_text())
    return []


def verdict(folder: Path) -> dict[str, Any] | None:
    for name in ("verdict.json", "task_verdict.json"):
        if (folder / name).is_file():
            data = json.loads((folder / name).read_text())
            return {"status": data["status"], "reason": data["reason"],
                    "gates": [[g["name"], g["status"], g["statement"], g["evidence"]] for g in data["gates"]]}
    return None


def dump(warehouse: Path) -> dict[str, Any]:
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        relations = sorted(name for (name,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall())
        runs: dict[str, str] = {}
        for table in ("runs", "task_experiments"):
            if table in relations:
                for run_id, experiment in con.execute(f"SELECT run_id, experiment FROM {table}").fetchall():
                    runs[experiment] = run_id
        out: dict[str, Any] = {}
        for experiment, run_id in sorted(runs.items()):
            out[experiment] = {
                "relations": {name: rows for name in relations if (rows := _rows(con, name, run_id))},
                "report": _masked(report_tables(warehouse / "reports" / run_id)),
                "verdict": _masked(verdict(warehouse / "registrations" / run_id)),
            }
        return out
    finally:
        con.close()


def diff(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Every difference, one line each (empty when every figure is the same)."""
    lines: list[str] = []
    for experiment in sorted(before.keys() | after.keys()):
        if experiment not in before or experiment not in after:
            lines.append(f"{experiment}: only in {'after' if experiment in after else 'before'}")
            continue
        b, a = before[experiment], after[experiment]
        for name in sorted(b["relations"].keys() | a["relations"].keys()):
            rows_b, rows_a = b["relations"].get(name), a["relations"].get(name)
            if rows_b is None or rows_a is None:
                lines.append(f"{experiment}: relation {name} only {'after' if rows_b is None else 'before'}")
            else:
                added, removed = set(rows_a[0]) - set(rows_b[0]), set(rows_b[0]) - set(rows_a[0])
                if added or removed:
                    lines.append(f"{experiment}: relation {name}: columns added {sorted(added)}, removed "
                                 f"{sorted(removed)} (the rows are compared on the columns both have)")
                    rows_b, rows_a = _project(rows_b, rows_a[0]), _project(rows_a, rows_b[0])
                if not same(rows_b, rows_a):
                    lines.append(f"{experiment}: relation {name} differs ({len(rows_b) - 1} rows before, "
                                 f"{len(rows_a) - 1} after): {_first_difference(rows_b, rows_a)}")
        tables_b = {t["title"]: t for t in b["report"]}
        tables_a = {t["title"]: t for t in a["report"]}
        for title in sorted(tables_b.keys() | tables_a.keys()):
            tb, ta = tables_b.get(title), tables_a.get(title)
            if tb is None or ta is None:
                lines.append(f"{experiment}: report table '{title}' only {'after' if tb is None else 'before'}")
            elif not same([tb["columns"], *tb["rows"]], [ta["columns"], *ta["rows"]]):
                lines.append(f"{experiment}: report table '{title}' differs: "
                             f"{_first_difference([tb['columns']] + tb['rows'], [ta['columns']] + ta['rows'])}")
        if not same(b["verdict"], a["verdict"]):
            lines.append(f"{experiment}: verdict differs: {b['verdict']} -> {a['verdict']}")
    return lines


def _project(rows: list[list[Any]], other_columns: list[str]) -> list[list[Any]]:
    """A relation's rows on the columns another build's relation has too, sorted again."""
    keep = [i for i, column in enumerate(rows[0]) if column in other_columns]
    body = sorted(([row[i] for i in keep] for row in rows[1:]), key=_sort_key)
    return [[rows[0][i] for i in keep]] + body


def _first_difference(rows_b: list, rows_a: list) -> str:
    header = rows_b[0]
    for i, (rb, ra) in enumerate(zip(rows_b, rows_a)):
        if not same(rb, ra):
            columns = [f"{header[k] if k < len(header) else k}: {x!r} -> {y!r}"[:300]
                       for k, (x, y) in enumerate(zip(rb, ra)) if not same(x, y)]
            return f"row {i}: " + "; ".join(columns)
    return f"{len(rows_b)} -> {len(rows_a)} rows"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    d = commands.add_parser("dump", help="what a warehouse's runs say, as JSON")
    d.add_argument("warehouse", type=Path)
    d.add_argument("out", type=Path)
    c = commands.add_parser("diff", help="compare two dumps; exit 1 when a figure differs")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "dump":
        args.out.write_text(json.dumps(dump(args.warehouse), indent=1, default=str))
        print(f"{args.out}: {args.warehouse}")
        return 0
    lines = diff(json.loads(args.before.read_text()), json.loads(args.after.read_text()))
    for line in lines:
        print(line)
    print("same figures" if not lines else f"{len(lines)} difference(s)")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
