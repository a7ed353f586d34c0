"""The records a run registers beside its rows: the run, its arms, comparisons, seed orders, tool sets, weights."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import TYPE_CHECKING, Iterable

from schemas.run_records import ComparisonRecord
from schemas.selection.rows import (
    OfferedTool,
    SeedOrder,
    SelectionArmRecord,
    SelectionRunRecord,
    WeightRecord,
)
from tasks.run.permute_tools import permute_tools, tool_set_id
from tasks.run.plan_units import WorkUnit
from tasks.run.prepare_run import PreparedRun
from tasks.taskset.request_table import parse_tools
from warehouse.register_run import RunRegistration

if TYPE_CHECKING:
    from tasks.tracing.trace_target import TraceTarget


def new_run_id(now: datetime | None = None) -> str:
    """Time-ordered and unique: 20261130T101502Z-3f9a1c."""
    now = now or datetime.now(timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"


def tooleval_version() -> str:
    try:
        return package_version("tooleval")
    except PackageNotFoundError:
        return "unknown"


def offered_tool_sets(units: Iterable[WorkUnit]) -> dict[str, tuple[str, ...]]:
    """Every tool set the units offer, as ``plan_batch`` offers them: set id -> tool names in the order of
    the first unit offering it. Read from the batches' ``tools`` column: the arm's catalogue where a request
    has no tools of its own, else each distinct set of its own (parsed once, however many arms and seeds)."""
    sets: dict[str, tuple[str, ...]] = {}
    seen_own: set[str] = set()
    for unit in units:
        for own in unit.batch.get_column("tools").unique(maintain_order=True).to_list():
            if own is None:
                if unit.arm.catalogue is None:
                    continue
                tools = permute_tools(unit.arm.catalogue.tools, unit.seed)
            elif own in seen_own:
                continue
            else:
                seen_own.add(own)
                tools = permute_tools(parse_tools(own) or (), unit.seed)
            names = tuple(tool.name for tool in tools)
            sets.setdefault(tool_set_id(names), names)
    return sets


def registration_records(
    prepared: PreparedRun,
    units: list[WorkUnit],
    run_id: str,
    started_at: datetime,
    criteria_hash: str | None = None,
    criteria_registered_at: datetime | None = None,
    trace: "TraceTarget | None" = None,
) -> RunRegistration:
    """``trace``: where the run's traces went (recorded on the run), None when it was not traced."""
    experiment = prepared.experiment
    run = SelectionRunRecord(
        run_id=run_id, experiment=experiment.name, experiment_path=str(experiment.path),
        experiment_hash=experiment.experiment_hash, taskset=prepared.taskset, started_at=started_at,
        finished_at=datetime.now(timezone.utc), n_rows=0, criteria_hash=criteria_hash,
        criteria_registered_at=criteria_registered_at,
        weights_window=prepared.weights.window if prepared.weights else None, tooleval_version=tooleval_version(),
        trace_endpoint=trace.endpoint if trace else None,
        trace_project=trace.project if trace else None,
    )
    arms = [
        SelectionArmRecord(run_id=run_id, arm=a.name, rung=a.rung, catalogue=a.catalogue_name, catalogue_hash=a.catalogue_hash,
                  prompt=a.prompt_name, prompt_hash=a.prompt_hash, model_id=a.model_id, selector=a.selector,
                  taskset_version=a.version, taskset_hash=prepared.versions[a.version].manifest.content_hash,
                  n_tools=len(a.catalogue.tools) if a.catalogue else 0, seeds=list(experiment.seeds),
                  abstain_rule=a.abstain_rule, decision_model_hash=a.decision_model_hash)
        for a in experiment.arms
    ]
    comparisons = [ComparisonRecord(run_id=run_id, baseline=c.baseline, arm=c.arm, changed=list(c.changed))
                   for c in experiment.comparisons]
    seed_orders = [
        SeedOrder(run_id=run_id, arm=a.name, seed=seed, tool=tool.name, position=position)
        for a in experiment.arms if a.catalogue is not None
        for seed in experiment.seeds
        for position, tool in enumerate(permute_tools(a.catalogue.tools, seed), start=1)
    ]
    offered = [OfferedTool(tool_set_id=set_id, tool=name)
               for set_id, names in offered_tool_sets(units).items() for name in names]
    weights = [
        WeightRecord(taskset=prepared.taskset, window_id=prepared.weights.window, tool=tool, weight=share)
        for tool, share in prepared.weights.weights.items()
    ] if prepared.weights else []
    return RunRegistration(run=run, arms=arms, comparisons=comparisons, seed_orders=seed_orders,
                           offered_tools=offered, weights=weights)
