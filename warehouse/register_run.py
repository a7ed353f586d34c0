"""Register a run: load its landed Parquet and its records into the DuckDB file in one transaction.

Idempotent: registering the same run again replaces its rows, so nothing is duplicated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from schemas.arrow import to_arrow_table
from schemas.rows import ArmRecord, ComparisonRecord, OfferedTool, RunRecord, SeedOrder, WeightRecord
from warehouse.connect import connect
from warehouse.parquet_store import run_files
from warehouse.tables import TABLES

REGISTER_MEMORY_LIMIT = "128MB"
"""DuckDB's memory limit while a run's rows are loaded. At its default (80% of the machine's memory) DuckDB
keeps the rows it inserts in its buffer pool: +0.8-1.3 GB of RSS for 1.2M rows. Bounded, it writes row
groups out to the database file as it goes: +0.2 GB for 1.2M rows, also when the transaction first deletes
4.8M rows of an earlier registration, at the same speed within this machine's noise. Set on the
registration's own connection, closed right after: the report's read-only connection keeps the default."""


@dataclass
class RunRegistration:
    """Everything a run writes besides its rows."""

    run: RunRecord
    arms: list[ArmRecord]
    comparisons: list[ComparisonRecord]
    seed_orders: list[SeedOrder]
    offered_tools: list[OfferedTool]
    weights: list[WeightRecord] = field(default_factory=list)


def _insert(con, table: str, records: list[BaseModel]) -> None:
    if not records:
        return
    model = TABLES[table]
    arrow = to_arrow_table(model, [r.model_dump() for r in records])
    con.register("_incoming", arrow)
    try:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
    finally:
        con.unregister("_incoming")


def register_run(db_path: Path, rows_dir: Path, registration: RunRegistration) -> int:
    """Load the run's rows and records; returns the number of rows registered."""
    run_id = registration.run.run_id
    files = [str(p) for p in run_files(rows_dir, run_id)]
    con = connect(db_path)
    con.execute(f"SET memory_limit = '{REGISTER_MEMORY_LIMIT}'")
    try:
        con.execute("BEGIN TRANSACTION")
        for table in ("landed_rows", "runs", "arms", "comparisons", "seed_orders"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        if files:
            con.execute("INSERT INTO landed_rows BY NAME SELECT * FROM read_parquet(?)", [files])
        n_rows = con.execute("SELECT count(*) FROM landed_rows WHERE run_id = ?", [run_id]).fetchall()[0][0]
        run = registration.run.model_copy(update={"n_rows": n_rows})
        _insert(con, "runs", [run])
        _insert(con, "arms", registration.arms)
        _insert(con, "comparisons", registration.comparisons)
        _insert(con, "seed_orders", registration.seed_orders)
        known = {r[0] for r in con.execute("SELECT DISTINCT tool_set_id FROM offered_tools").fetchall()}
        _insert(con, "offered_tools", [t for t in registration.offered_tools if t.tool_set_id not in known])
        for taskset, window in {(w.taskset, w.window_id) for w in registration.weights}:
            con.execute("DELETE FROM production_weights WHERE taskset = ? AND window_id = ?", [taskset, window])
        _insert(con, "production_weights", registration.weights)
        con.execute("COMMIT")
        return n_rows
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        con.close()
