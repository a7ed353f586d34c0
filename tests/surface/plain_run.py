"""A task experiment run through the plain functions the surface-run flow's tasks wrap, without Prefect:
for tests that need registered runs but not the engine (the flow itself is tested in test_surface_flow)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from tasks.surface.plan_task_units import plan_task_units
from tasks.surface.prepare_task_run import prepare_task_run
from tasks.surface.publish_task_report import PublishedTaskReport, publish_task_report
from tasks.surface.run_task_unit import TaskRunContext, run_task_unit
from tasks.surface.task_criteria import register_task_criteria
from tasks.surface.task_registration import task_registration
from warehouse.location import warehouse_at
from warehouse.register_task_run import register_task_run
from warehouse.task_paths import task_cache_path, task_calls_dir, task_runs_dir


def run_plain(experiment: Path, warehouse_dir: Path, run_id: str = "plain-1") -> PublishedTaskReport:
    started = datetime.now(timezone.utc)
    prepared = prepare_task_run(experiment)
    warehouse = warehouse_at(warehouse_dir)
    registered = register_task_criteria(prepared.criteria[0], warehouse.registrations_dir, run_id) \
        if prepared.criteria else None
    ctx = TaskRunContext(run_id=run_id, experiment=prepared.experiment.name, runs_dir=task_runs_dir(warehouse),
                         calls_dir=task_calls_dir(warehouse), cache_path=task_cache_path(warehouse))
    for unit in plan_task_units(prepared.experiment, prepared.versions):
        run_task_unit(unit, ctx)
    register_task_run(warehouse.db_path, ctx.runs_dir, ctx.calls_dir,
                      task_registration(prepared, run_id, started, registered.sha256 if registered else None,
                                        registered.registered_at if registered else None))
    return publish_task_report(warehouse, run_id)
