"""What a selection run registers besides its rows and the core's records: each arm's catalogue and selector,
the seeds' tool orders, the tool sets its requests were offered, and the production weights it read."""

from __future__ import annotations

from typing import Any, Iterable

from schemas.selection.rows import OfferedTool, SeedOrder, SelectionArmRecord, WeightRecord
from tasks.core_records import WorkUnit
from tasks.instrument_api import PreparedRun
from tasks.run.permute_tools import permute_tools, tool_set_id
from tasks.selection.arms import SelectionArm
from tasks.taskset.request_table import parse_tools


def arm_record(arm: SelectionArm, common: dict[str, Any]) -> SelectionArmRecord:
    return SelectionArmRecord(**common, catalogue=arm.catalogue_name, catalogue_hash=arm.catalogue_hash,
                              selector=arm.selector, n_tools=len(arm.catalogue.tools) if arm.catalogue else 0,
                              abstain_rule=arm.abstain_rule, decision_model_hash=arm.decision_model_hash,
                              far_cutoff=arm.far_cutoff)


def weights_window(prepared: PreparedRun) -> dict[str, Any]:
    """The run record's own field: the production weights window its weighted figures read."""
    return {"weights_window": prepared.weights.window if prepared.weights else None}


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


def selection_records(prepared: PreparedRun, units: list[WorkUnit], run_id: str) -> dict[str, list[Any]]:
    """Seed orders (each catalogue arm's tools in each seed's order), offered tool sets, production weights."""
    experiment = prepared.experiment
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
    return {"seed_orders": seed_orders, "offered_tools": offered, "production_weights": weights}
