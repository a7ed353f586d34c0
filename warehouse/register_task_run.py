"""Register a task run: load its landed Parquet (task_runs, task_calls) and its records into the DuckDB
file in one transaction. Idempotent: registering the same run again replaces its rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from schemas.run_records import ComparisonRecord
from schemas.surface.rows import SurfaceArmRecord, SurfaceRunRecord
from warehouse.connect import connect
from warehouse.parquet_store import run_files
from warehouse.register_run import _insert


@dataclass
class TaskRunRegistration:
    """Everything a task run writes besides its rows."""

    experiment: SurfaceRunRecord
    arms: list[SurfaceArmRecord]
    comparisons: list[ComparisonRecord]


def register_task_run(db_path: Path, runs_dir: Path, calls_dir: Path, registration: TaskRunRegistration) -> int:
    """Load the run's rows and records; returns the number of task_runs rows registered."""
    run_id = registration.experiment.run_id
    runs = [str(p) for p in run_files(runs_dir, run_id)]
    calls = [str(p) for p in run_files(calls_dir, run_id)]
    con = connect(db_path)
    try:
        con.execute("BEGIN TRANSACTION")
        for table in ("task_runs", "task_calls", "task_experiments", "task_arms", "task_comparisons"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])
        if runs:
            con.execute("INSERT INTO task_runs BY NAME SELECT * FROM read_parquet(?)", [runs])
        if calls:
            con.execute("INSERT INTO task_calls BY NAME SELECT * FROM read_parquet(?)", [calls])
        n_runs = con.execute("SELECT count(*) FROM task_runs WHERE run_id = ?", [run_id]).fetchall()[0][0]
        n_calls = con.execute("SELECT count(*) FROM task_calls WHERE run_id = ?", [run_id]).fetchall()[0][0]
        record = registration.experiment.model_copy(update={"n_runs": n_runs, "n_calls": n_calls})
        _insert(con, "task_experiments", [record])
        _insert(con, "task_arms", registration.arms)
        _insert(con, "task_comparisons", registration.comparisons)
        con.execute("COMMIT")
        return n_runs
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        con.close()
