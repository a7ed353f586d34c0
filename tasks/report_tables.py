"""The report as plain tables read from the warehouse views; renderers turn them into text, markdown, HTML."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb

TOP_PAIRS = 5


@dataclass
class ReportTable:
    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""


@dataclass
class Report:
    run_id: str
    headline: list[str]
    tables: list[ReportTable] = field(default_factory=list)


def pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def pct_with_fraction(correct: int, n: int) -> str:
    """Small denominators show the fraction too (23/24), as the reader needs both."""
    share = pct(correct / n if n else None)
    return f"{share} ({correct}/{n})" if n < 100 else share


def points(delta: float | None) -> str:
    return "" if delta is None else f"{100 * delta:+.1f}"


def _records(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def latest_run_id(con: duckdb.DuckDBPyConnection) -> str | None:
    rows = con.execute("SELECT run_id FROM runs ORDER BY finished_at DESC, run_id DESC LIMIT 1").fetchall()
    return rows[0][0] if rows else None


def build_report(con: duckdb.DuckDBPyConnection, run_id: str) -> Report:
    runs = _records(con, "SELECT * FROM runs WHERE run_id = ?", [run_id])
    if not runs:
        raise KeyError(f"run {run_id} is not registered")
    run = runs[0]
    arms = _records(con, "SELECT * FROM arms WHERE run_id = ? ORDER BY rung", [run_id])
    headline = [
        f"run {run_id} · experiment {run['experiment']} · task set {run['taskset']} "
        f"{', '.join(sorted({a['taskset_version'] for a in arms}))} · {run['n_rows']:,} rows",
        "arms: " + " | ".join(f"{a['rung']}. {a['arm']} ({a['catalogue']}, {a['n_tools'] or 'per-request'} tools, "
                               f"{a['selector']} {a['model_id']})" for a in arms),
    ]
    report = Report(run_id=run_id, headline=headline)
    report.tables.append(aggregate_table(con, run_id))
    report.tables.append(per_tool_table(con, run_id, [a["arm"] for a in arms]))
    report.tables.append(pairs_table(con, run_id))
    weighted = weighted_table(con, run_id, run["weights_window"])
    if weighted is not None:
        report.tables.append(weighted)
    return report


def aggregate_table(con: duckdb.DuckDBPyConnection, run_id: str) -> ReportTable:
    rows = _records(con, "SELECT * FROM aggregate_accuracy WHERE run_id = ? ORDER BY slice, rung", [run_id])
    previous: dict[str, float] = {}
    out = []
    for r in rows:
        delta = r["accuracy"] - previous[r["slice"]] if r["slice"] in previous else None
        previous[r["slice"]] = r["accuracy"]
        noise = "" if delta is None else ("inside seed spread" if abs(delta) <= r["seed_spread"] else "")
        out.append([r["slice"], f"{r['rung']}. {r['arm']}", f"{r['n_requests']} x {r['n_seeds']}",
                    pct_with_fraction(r["correct"], r["n"]), points(delta), noise,
                    f"{pct(r['seed_min'])}–{pct(r['seed_max'])}", points(r["seed_spread"]),
                    f"{r['invalid']}/{r['error']}/{r['empty']}"])
    return ReportTable(
        title="Accuracy by slice and rung (slices are never averaged together)",
        columns=["slice", "rung", "requests x seeds", "accuracy", "Δ pts vs previous rung", "noise",
                 "seed min–max", "seed spread pts", "invalid/error/empty"],
        rows=out,
    )


def per_tool_table(con: duckdb.DuckDBPyConnection, run_id: str, arm_order: list[str]) -> ReportTable:
    rows = _records(con, "SELECT * FROM per_tool_accuracy WHERE run_id = ? ORDER BY slice, tool, rung", [run_id])
    cells: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for r in rows:
        cells.setdefault((r["slice"], r["tool"]), {})[r["arm"]] = r
    out = []
    for (slice_, tool), by_arm in sorted(cells.items()):
        line = [slice_, tool]
        last = None
        worst = None
        for arm in arm_order:
            r = by_arm.get(arm)
            if r is None:
                line += ["", ""]
                continue
            delta = r["accuracy"] - last if last is not None else None
            worst = delta if delta is not None and (worst is None or delta < worst) else worst
            line += [pct_with_fraction(r["correct"], r["n"]), points(delta)]
            last = r["accuracy"]
        out.append(line)
    columns = ["slice", "tool"]
    for arm in arm_order:
        columns += [arm, "Δ"]
    return ReportTable(title="Per-tool accuracy across rungs (Δ = points vs the previous rung)",
                       columns=columns, rows=out)


def pairs_table(con: duckdb.DuckDBPyConnection, run_id: str) -> ReportTable:
    rows = _records(con, """
        SELECT * FROM (
            SELECT *, row_number() OVER (PARTITION BY arm ORDER BY n DESC, expected, chosen) AS k
            FROM confused_pairs WHERE run_id = ?
        ) WHERE k <= ? ORDER BY rung, n DESC""", [run_id, TOP_PAIRS])
    out = [[f"{r['rung']}. {r['arm']}", r["expected"], r["chosen"], str(r["n"]), pct(r["share_of_failures"]),
            pct_with_fraction(r["n"], r["n_offered_together"] or 0)] for r in rows]
    return ReportTable(title=f"Top {TOP_PAIRS} confused pairs per rung (expected -> chosen)",
                       columns=["rung", "expected", "chosen", "rows", "share of failures", "rate when offered together"],
                       rows=out)


def weighted_table(con: duckdb.DuckDBPyConnection, run_id: str, window: str | None) -> ReportTable | None:
    if not window:
        return None
    rows = _records(con, "SELECT * FROM weighted_accuracy WHERE run_id = ? ORDER BY rung", [run_id])
    out, last = [], None
    for r in rows:
        delta = r["weighted_accuracy"] - last if last is not None else None
        last = r["weighted_accuracy"]
        out.append([f"{r['rung']}. {r['arm']}", pct(r["weighted_accuracy"]), points(delta),
                    pct(r["accuracy_unweighted"]), pct(r["weight_covered"])])
    return ReportTable(title=f"Volume-weighted accuracy (production window {window})",
                       columns=["rung", "weighted", "Δ pts", "unweighted (same rows)", "traffic covered"], rows=out,
                       note="weighted = Σ share × tool accuracy over tools this rung has requests for")
