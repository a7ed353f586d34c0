"""The surface-run flow's Prefect tasks: thin wrappers over plain functions in tasks/surface and warehouse/.

As for the evaluate flow, retries mend file and warehouse I/O only; model calls retry in the provider layer
where each retry is counted, and a task's outcome is cached the moment it ends (tasks/surface/task_cache.py).
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from flows.run_tasks import retry_on_io
from tasks.surface.plan_task_units import TaskUnit
from tasks.surface.run_task_unit import TaskRunContext, TaskUnitResult, run_task_unit
from warehouse.register_task_run import TaskRunRegistration, register_task_run


@task(name="run-tasks", retries=2, retry_delay_seconds=[2, 10], retry_condition_fn=retry_on_io,
      task_run_name="{unit.label}", cache_policy=NO_CACHE, log_prints=False)
def run_task_unit_task(unit: TaskUnit, ctx: TaskRunContext) -> TaskUnitResult:
    """Run (per-task cache inside) and land one unit: task_runs and task_calls Parquet."""
    return run_task_unit(unit, ctx)


@task(name="register-task-run", retries=3, retry_delay_seconds=[1, 5, 15], retry_condition_fn=retry_on_io,
      cache_policy=NO_CACHE, log_prints=False)
def register_task_run_task(db_path: Path, runs_dir: Path, calls_dir: Path, registration: TaskRunRegistration) -> int:
    """Load the landed Parquet and the run's records into the DuckDB file in one transaction."""
    return register_task_run(db_path, runs_dir, calls_dir, registration)
