"""Register a run: load its landed Parquet and its records into the DuckDB file in one transaction.

The same for every instrument: which tables a run's rows and records go to is its store
(its card, tasks/instrument_card.py). Idempotent: registering the same run again replaces its rows, so nothing is
duplicated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from schemas.arrow import to_arrow_table
from tasks.drill_points import reached
from tasks.files.atomic_write import write_atomic
from tasks.instrument_card import InstrumentStore
from tasks.instrument_registry import card, store
from warehouse.connect import connect
from warehouse.parquet_store import run_files

REGISTER_MEMORY_LIMIT = "128MB"
"""DuckDB's memory limit on a registration's own connection: bounded, DuckDB writes row groups out to the file
as it inserts instead of keeping them in its buffer pool. Rows go in without preserving insertion order (no
view, query or report depends on it) and by batches of ``REGISTER_BATCH_BYTES``, in one transaction, so the
memory does not grow with the run (benchmarks/register_memory.py); what does not fit spills to
``tooleval.duckdb.tmp/`` beside the file, which the preflight counts in the disk a run needs
(tasks/run/preflight.py)."""

REGISTER_BATCH_BYTES = 64 * 2**20
"""At most this much Parquet (on disk) per ``INSERT``; a larger file goes in alone."""

RUN_RECORDS_FILE = "run-records.json"


@dataclass
class RunRegistration:
    """Everything a run writes besides its rows: table -> records, the run record in its store's run table."""

    instrument: str
    records: dict[str, list[BaseModel]]

    @property
    def store(self) -> InstrumentStore:
        return store(self.instrument)

    @property
    def run(self) -> BaseModel:
        return self.records[self.store.run_table][0]

    @property
    def run_id(self) -> str:
        return self.run.run_id


def save_registration(registrations_dir: Path, registration: RunRegistration) -> Path:
    """Keep a run's records beside its landed rows, before it registers: if the DuckDB file is held (or the
    process dies) ``tooleval register RUN_ID`` or the next run registers it from here, running nothing."""
    directory = Path(registrations_dir) / registration.run_id
    directory.mkdir(parents=True, exist_ok=True)
    record = {"instrument": registration.instrument,
              "tables": {table: [r.model_dump(mode="json") for r in records]
                         for table, records in registration.records.items()}}
    return write_atomic(directory / RUN_RECORDS_FILE, json.dumps(record))


def load_registration(registrations_dir: Path, run_id: str) -> RunRegistration | None:
    path = Path(registrations_dir) / run_id / RUN_RECORDS_FILE
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    models = card(record["instrument"]).row_models()
    return RunRegistration(record["instrument"], {table: [models[table].model_validate(r) for r in records]
                                                  for table, records in record["tables"].items()})


def saved_run_ids(registrations_dir: Path) -> list[str]:
    """Runs whose records were saved (registered or not), oldest first."""
    return sorted(p.parent.name for p in Path(registrations_dir).glob(f"*/{RUN_RECORDS_FILE}"))


def _insert(con, table: str, model: type[BaseModel], records: list[BaseModel], replacing: tuple[str, ...] = ()) -> None:
    """Insert the records (of the table's ``model``); ``replacing``: first delete the table's rows that share
    their values in these columns (a table shared by runs: a tool set's members, a weights window)."""
    if not records:
        return
    con.register("_incoming", to_arrow_table(model, [r.model_dump() for r in records]))
    try:
        if replacing:
            same = " AND ".join(f"{table}.{column} = k.{column}" for column in replacing)
            con.execute(f"DELETE FROM {table} USING (SELECT DISTINCT {', '.join(replacing)} FROM _incoming) k "
                        f"WHERE {same}")
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
    finally:
        con.unregister("_incoming")


def parquet_batches(paths: list[Path], max_bytes: int = REGISTER_BATCH_BYTES) -> list[list[str]]:
    """The files in order, grouped so that each group holds at most ``max_bytes`` of Parquet (a file larger
    than that is a group of its own); every file is in exactly one group."""
    batches: list[list[str]] = []
    size = 0
    for path in paths:
        length = Path(path).stat().st_size
        if not batches or size + length > max_bytes:
            batches.append([])
            size = 0
        batches[-1].append(str(path))
        size += length
    return batches


def register_run(warehouse_dir: Path, registration: RunRegistration, wait_s: float | None = None) -> int:
    """Load the run's landed rows and its records; returns the number of rows registered (the first landed
    table's). Waits (bounded) while another process holds the file, then raises WarehouseBusy
    (warehouse/connect.py)."""
    store, run_id = registration.store, registration.run_id
    con = connect(Path(warehouse_dir) / "tooleval.duckdb", wait_s=wait_s)
    con.execute(f"SET memory_limit = '{REGISTER_MEMORY_LIMIT}'")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET enable_progress_bar = false")  # one bar per batch on the CLI's stderr otherwise
    try:
        con.execute("BEGIN TRANSACTION")
        for table in store.run_tables:
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        for table, folder in store.landed.items():
            for files in parquet_batches(run_files(Path(warehouse_dir) / folder, run_id)):
                # union_by_name: a batch may mix files landed before and after a column was added
                con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM read_parquet(?, union_by_name = true)",
                            [files])
        counts = {column: con.execute(f"SELECT count(*) FROM {table} WHERE run_id = ?", [run_id]).fetchall()[0][0]
                  for column, table in store.counts.items()}
        records = {**registration.records, store.run_table: [registration.run.model_copy(update=counts)]}
        models = card(registration.instrument).row_models()  # its own tables: no other instrument is imported
        for table, rows in records.items():
            _insert(con, table, models[table], rows, store.shared.get(table, ()))
        reached("registration-uncommitted", run_id)
        con.execute("COMMIT")
        return next(iter(counts.values()))
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        con.close()
