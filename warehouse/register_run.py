"""Register a run: load its landed Parquet and its records into the DuckDB file in one transaction.

Idempotent: registering the same run again replaces its rows, so nothing is duplicated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from schemas.arrow import to_arrow_table
from schemas.run_records import ComparisonRecord
from schemas.selection.rows import (
    OfferedTool,
    SeedOrder,
    SelectionArmRecord,
    SelectionRunRecord,
    WeightRecord,
)
from tasks.files.atomic_write import write_atomic
from tasks.run.drill_points import reached
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

    run: SelectionRunRecord
    arms: list[SelectionArmRecord]
    comparisons: list[ComparisonRecord]
    seed_orders: list[SeedOrder]
    offered_tools: list[OfferedTool]
    weights: list[WeightRecord] = field(default_factory=list)


RUN_RECORDS_FILE = "run-records.json"


def save_registration(registrations_dir: Path, registration: RunRegistration) -> Path:
    """Keep a run's records beside its landed rows, before it registers: if the DuckDB file is held (or the
    process dies) ``tooleval register RUN_ID`` or the next run registers it from here, selecting nothing."""
    directory = Path(registrations_dir) / registration.run.run_id
    directory.mkdir(parents=True, exist_ok=True)
    record = {"run": registration.run.model_dump(mode="json"),
              **{name: [r.model_dump(mode="json") for r in getattr(registration, name)]
                 for name in ("arms", "comparisons", "seed_orders", "offered_tools", "weights")}}
    return write_atomic(directory / RUN_RECORDS_FILE, json.dumps(record))


def load_registration(registrations_dir: Path, run_id: str) -> RunRegistration | None:
    path = Path(registrations_dir) / run_id / RUN_RECORDS_FILE
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    return RunRegistration(run=SelectionRunRecord.model_validate(record["run"]),
                           arms=[SelectionArmRecord.model_validate(r) for r in record["arms"]],
                           comparisons=[ComparisonRecord.model_validate(r) for r in record["comparisons"]],
                           seed_orders=[SeedOrder.model_validate(r) for r in record["seed_orders"]],
                           offered_tools=[OfferedTool.model_validate(r) for r in record["offered_tools"]],
                           weights=[WeightRecord.model_validate(r) for r in record["weights"]])


def saved_run_ids(registrations_dir: Path) -> list[str]:
    """Runs whose records were saved (registered or not), oldest first."""
    return sorted(p.parent.name for p in Path(registrations_dir).glob(f"*/{RUN_RECORDS_FILE}"))


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


def register_run(db_path: Path, rows_dir: Path, registration: RunRegistration, wait_s: float | None = None) -> int:
    """Load the run's rows and records; returns the number of rows registered. Waits (bounded) while
    another process holds the file, then raises WarehouseBusy (warehouse/connect.py)."""
    run_id = registration.run.run_id
    files = [str(p) for p in run_files(rows_dir, run_id)]
    con = connect(db_path, wait_s=wait_s)
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
        reached("registration-uncommitted", run_id)
        con.execute("COMMIT")
        return n_rows
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        con.close()
