"""The evaluate flow: extract -> check -> plan -> select and land -> register -> report."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from prefect import flow, get_run_logger, unmapped
from prefect.task_runners import ThreadPoolTaskRunner

from tasks.plan_units import plan_units
from tasks.prepare_run import prepare_run
from tasks.report_files import publish_report
from tasks.registration_records import new_run_id, registration_records
from tasks.select_batch import RunContext, UnitResult, select_and_land_task
from warehouse.location import warehouse_at
from warehouse.register_run import register_run

MAX_WORKERS = 4


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    n_rows: int
    n_units: int
    n_cache_hits: int
    n_failures: int
    warehouse: str
    reports: dict[str, str]


@flow(name="evaluate", task_runner=ThreadPoolTaskRunner(max_workers=MAX_WORKERS), log_prints=False)
def evaluate(experiment_path: str, warehouse_dir: str | None = None, run_id: str | None = None,
             use_cache: bool = True) -> RunSummary:
    """Run every arm x seed of an experiment and register the rows in the warehouse."""
    started_at = datetime.now(timezone.utc)
    warehouse = warehouse_at(warehouse_dir)
    run_id = run_id or new_run_id(started_at)

    prepared = prepare_run(experiment_path)
    requests = {version: loaded.requests for version, loaded in prepared.versions.items()}
    units = plan_units(prepared.experiment, requests, prepared.taskset)
    ctx = RunContext(run_id=run_id, experiment=prepared.experiment.name, rows_dir=warehouse.rows_dir,
                     cache_path=warehouse.cache_path if use_cache else None)

    results: list[UnitResult] = select_and_land_task.map(units, ctx=unmapped(ctx)).result()

    registration = registration_records(prepared, units, run_id, started_at)
    n_rows = register_run(warehouse.db_path, warehouse.rows_dir, registration)
    get_run_logger().info("run %s: %d rows registered in %s", run_id, n_rows, warehouse.db_path)

    reports = publish_report(warehouse, run_id)
    return RunSummary(run_id=run_id, n_rows=n_rows, n_units=len(units),
                      n_cache_hits=sum(r.n_cache_hits for r in results),
                      n_failures=sum(r.n_failures for r in results), warehouse=str(warehouse.root),
                      reports={kind: str(path) for kind, path in reports.items()})
