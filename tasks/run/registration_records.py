"""The records a run registers beside its rows: the run and its comparisons (here), its arms and whatever
else its instrument keeps (``Instrument.records``)."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import TYPE_CHECKING, Mapping

from schemas.run_records import ComparisonRecord
from tasks.core_records import WorkUnit
from tasks.experiment.criteria import CriteriaRegistration
from tasks.instrument_api import PreparedRun
from tasks.run.unpinned_cache import ArmCacheUse
from warehouse.register_run import RunRegistration

if TYPE_CHECKING:
    from tasks.core_records import TraceTarget
    from tasks.instrument_api import Forecast


def new_run_id(now: datetime | None = None) -> str:
    """Time-ordered and unique: 20261130T101502Z-3f9a1c."""
    now = now or datetime.now(timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"


def tooleval_version() -> str:
    try:
        return package_version("tooleval")
    except PackageNotFoundError:
        return "unknown"


def registration_records(prepared: PreparedRun, units: list[WorkUnit], run_id: str, started_at: datetime,
                         criteria: CriteriaRegistration | None = None, trace: "TraceTarget | None" = None,
                         cached: Mapping[str, ArmCacheUse] | None = None, forecast: "Forecast | None" = None
                         ) -> RunRegistration:
    """``criteria``: what the run registered before its first call; ``trace``: where its traces went (both
    recorded on the run), None when it registered none or was not traced; ``cached``: each arm's use of the
    result cache (``tasks/run/unpinned_cache.py``: recorded on its arm), None when not counted; ``forecast``:
    what the run was forecast to cost before its first call (its records registered with it)."""
    cached = cached or {}
    kind, experiment = prepared.instrument, prepared.experiment
    store = kind.store
    run = kind.run_record(
        run_id=run_id, experiment=experiment.name, experiment_path=str(experiment.path),
        experiment_hash=experiment.experiment_hash, taskset=prepared.taskset, started_at=started_at,
        finished_at=datetime.now(timezone.utc), criteria_hash=criteria.sha256 if criteria else None,
        criteria_registered_at=criteria.registered_at if criteria else None, tooleval_version=tooleval_version(),
        trace_endpoint=trace.endpoint if trace else None, trace_project=trace.project if trace else None,
        **{column: 0 for column in store.counts}, **kind.run_fields(prepared))
    arms = [kind.arm_record(arm, dict(
        run_id=run_id, arm=arm.name, rung=arm.rung, prompt=arm.prompt_name, prompt_hash=arm.prompt_hash,
        model_id=arm.model_id, taskset_version=arm.version, seeds=list(experiment.seeds),
        taskset_hash=prepared.versions[arm.version].manifest.content_hash,
        **(cached[arm.name].record_fields() if arm.name in cached else {}))) for arm in experiment.arms]
    comparisons = [ComparisonRecord(run_id=run_id, baseline=c.baseline, arm=c.arm, changed=list(c.changed))
                   for c in experiment.comparisons]
    return RunRegistration(kind.name, {store.run_table: [run], store.arm_table: arms,
                                       store.comparison_table: comparisons, **kind.records(prepared, units, run_id),
                                       **(forecast.records(run_id) if forecast is not None else {})})
