"""An experiment run through the plain functions the evaluate flow's tasks wrap, without Prefect: for tests
that need registered runs but not the engine (the flow itself is tested in tests/flows and test_surface_flow)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from tasks.core_records import RunContext
from tasks.experiment.criteria import register_criteria
from tasks.report.publish import PublishedReport, judge_and_publish
from tasks.run.prepare_run import prepare_run
from tasks.run.registration_records import registration_records
from tasks.run.work_units import plan_units, run_unit
from warehouse.location import warehouse_at
from warehouse.register_run import register_run


def run_plain(experiment: Path, warehouse_dir: Path, run_id: str = "plain-1") -> PublishedReport:
    started = datetime.now(timezone.utc)
    prepared = prepare_run(experiment)
    kind, warehouse = prepared.instrument, warehouse_at(warehouse_dir)
    registered = (register_criteria(prepared.criteria[0], kind.criteria_file, warehouse.registrations_dir, run_id)
                  if prepared.criteria else None)
    ctx = RunContext(run_id=run_id, experiment=prepared.experiment.name, warehouse=warehouse.root,
                     cache_path=warehouse.root / "cache" / kind.store.cache_file)
    units = plan_units(prepared)
    for unit in units:
        run_unit(unit, ctx)
    kind.units_done()  # as the evaluate flow: warm MCP servers stopped, given-up tools forgotten
    register_run(warehouse.root, registration_records(prepared, units, run_id, started, registered))
    return judge_and_publish(warehouse, run_id)
