"""Runs whose rows landed but whose registration waited: a DuckDB file held by another process past the
bounded wait, or a process that died between landing and registering. Their records are kept in
``registrations/<run_id>/run-records.json`` (warehouse/register_run.py), with the instrument that ran
them; ``tooleval register RUN_ID`` and every later run register them from there, run nothing again, then
judge and publish them. A run already registered and reported is left as it is (its verdict was given when it
registered): ``register`` says so and changes nothing."""

from __future__ import annotations

from dataclasses import dataclass

from tasks.files.input_errors import InputError
from tasks.instrument_registry import stores
from tasks.report.publish import PublishedReport, judge_and_publish, read_report
from warehouse.connect import WarehouseBusy, connect
from warehouse.location import Warehouse
from warehouse.register_run import RunRegistration, load_registration, register_run, saved_run_ids


@dataclass(frozen=True)
class LateRegistration:
    run_id: str
    n_rows: int
    published: PublishedReport
    instrument: str
    """The run's instrument (tasks/instrument_registry.py)."""
    already_registered: bool = False
    """The run was registered and reported before: nothing was registered, judged or written again."""


def registered_run_ids(warehouse: Warehouse, wait_s: float | None = None) -> set[str]:
    if not warehouse.db_path.is_file():
        return set()
    with connect(warehouse.db_path, read_only=True, wait_s=wait_s) as con:
        present = {name for (name,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        return {run_id for store in stores().values() if store.run_table in present  # a half-created file lacks some
                for (run_id,) in con.execute(f"SELECT run_id FROM {store.run_table}").fetchall()}


def unregistered_run_ids(warehouse: Warehouse, wait_s: float | None = None) -> list[str]:
    """Runs with saved records that the DuckDB file does not hold yet, oldest first."""
    registered = registered_run_ids(warehouse, wait_s)
    return [run_id for run_id in saved_run_ids(warehouse.registrations_dir) if run_id not in registered]


def register_saved_run(warehouse: Warehouse, run_id: str, wait_s: float | None = None) -> LateRegistration:
    """Register a run from its saved records and landed Parquet, then judge and publish it."""
    registration = load_registration(warehouse.registrations_dir, run_id)
    if registration is None:
        raise InputError.one(str(warehouse.registrations_dir / run_id), f"run {run_id}", "run-landed",
                             "no saved registration for this run id in this warehouse")
    from tasks.report.render import report_files

    reports = report_files(warehouse.reports_dir / run_id)
    held = registered_items(warehouse, registration, wait_s)
    if held is not None and all(path.is_file() for path in reports.values()):
        published = PublishedReport(read_report(warehouse, run_id, registration.instrument), reports)
        return LateRegistration(run_id, held, published, registration.instrument, already_registered=True)
    n_rows = register_run(warehouse.root, registration, wait_s=wait_s)
    return LateRegistration(run_id, n_rows, judge_and_publish(warehouse, run_id), registration.instrument)


def registered_items(warehouse: Warehouse, registration: RunRegistration, wait_s: float | None = None) -> int | None:
    """The rows (task runs) the warehouse holds for the run, from its run record; None when it is not registered."""
    if not warehouse.db_path.is_file():
        return None
    store = registration.store
    with connect(warehouse.db_path, read_only=True, wait_s=wait_s) as con:
        if not con.execute("SELECT 1 FROM information_schema.tables WHERE table_name = ?",
                           [store.run_table]).fetchall():
            return None
        found = con.execute(f"SELECT {next(iter(store.counts))} FROM {store.run_table} WHERE run_id = ?",
                            [registration.run_id]).fetchall()
        return int(found[0][0]) if found else None


def register_waiting_runs(warehouse: Warehouse, wait_s: float | None = None) -> list[LateRegistration]:
    """Register every run that landed but did not register (called by each run after its own); stops
    quietly when the file is held (the next run tries again)."""
    done: list[LateRegistration] = []
    try:
        for run_id in unregistered_run_ids(warehouse, wait_s):
            done.append(register_saved_run(warehouse, run_id, wait_s))
    except WarehouseBusy:
        pass
    return done
