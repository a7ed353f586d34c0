"""The evaluate flow's Prefect tasks: thin wrappers over plain functions in tasks/ and warehouse/.

Retries are for what a retry can mend: file and warehouse I/O (a full disk freed, a DuckDB file another
process held for a moment, a network filesystem's hiccup). A deterministic failure (a bug, bad data) is
not retried: it would fail the same way. Network retries of model calls live in the provider layer
(tasks/selectors/retry_policy.py), where each is counted on its row.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import duckdb
from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.run.select_batch import RunContext, UnitResult, select_and_land
from tasks.run.plan_units import WorkUnit
from warehouse.connect import WarehouseBusy
from warehouse.register_run import RunRegistration, register_run

IO_ERRORS = (OSError, duckdb.IOException)
"""Failures a retry can mend: file-system and DuckDB file I/O (a lock held elsewhere included), and a
SQLite file (the selection cache, the budget ledger) locked by another process for longer than its timeout."""


def is_io_failure(error: BaseException) -> bool:
    return isinstance(error, IO_ERRORS) or (isinstance(error, sqlite3.OperationalError)
                                            and "locked" in str(error).lower())


def retry_on_io(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect's retry condition: retry only when the task failed on I/O."""
    try:
        state.result()
    except BaseException as error:  # noqa: BLE001 - anything but I/O is deterministic here: not retried
        return is_io_failure(error)
    return False


@task(name="select-and-land", retries=2, retry_delay_seconds=[2, 10], retry_condition_fn=retry_on_io,
      task_run_name="{unit.label}", cache_policy=NO_CACHE, log_prints=False)
def select_and_land_task(unit: WorkUnit, ctx: RunContext) -> UnitResult:
    """Select (per-request cache inside, see SelectionCache) and land one work unit as Parquet."""
    return select_and_land(unit, ctx)


@task(name="register-run", retries=3, retry_delay_seconds=[1, 5, 15], retry_condition_fn=retry_on_io,
      cache_policy=NO_CACHE, log_prints=False)
def register_run_task(db_path: Path, rows_dir: Path, registration: RunRegistration) -> int | WarehouseBusy:
    """Load the landed Parquet and the run's records into the DuckDB file in one transaction; the number
    of rows, or WarehouseBusy (returned, not raised: a held file is an outcome of the run, not a crash)
    when another process held the file past the bounded wait."""
    try:
        return register_run(db_path, rows_dir, registration)
    except WarehouseBusy as busy:
        return busy
