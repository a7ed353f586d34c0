"""The run's work: arm x seed x batch. A work unit is one Prefect task's worth of it, run by its instrument
(``Instrument.run_unit``), which lands the unit's rows as Parquet under the run's warehouse.

A unit carries a batch of its version's work items (``Instrument.work_items``: a slice of the request
table, a slice of the tasks), not one object per item. What each item needs for the unit's arm and seed (the tools in the seed's
order, the cache key) is worked out where the unit runs, and dropped with its rows.
"""

from __future__ import annotations

from typing import Any

from tasks.core_records import ResolvedArm, RunContext, UnitResult, WorkUnit
from tasks.drill_points import reached
from tasks.instrument_api import PreparedRun, instrument
from tasks.run.item_counter import unit_done, unit_landed, unit_started


UNITS_PER_ARM_SEED = 16
"""The most units one arm x seed is cut into: a version too large for ``batch_size`` items a unit to fit in
this many gets larger units instead of more. Each unit costs Prefect's bookkeeping (a task run's states,
its future, its parameters) whatever its size, so a unit count that grows with the run would make that cost
grow with it; a fixed count per arm x seed keeps it a constant, small share of a large run, while the units
stay enough to keep the flow's threads (or a few Dask workers) busy and to balance the slow arms."""


def unit_size(n_items: int, batch_size: int) -> int:
    """Items per unit for one arm x seed of ``n_items``: ``batch_size``, or more when that would cut it into
    more than ``UNITS_PER_ARM_SEED`` units (the same count then, as evenly as whole items allow)."""
    return max(batch_size, -(-n_items // UNITS_PER_ARM_SEED))


def plan_units(prepared: PreparedRun) -> list[WorkUnit]:
    """Every work unit of the experiment: arms in ladder order, then seeds, then batches (``unit_size``)."""
    kind, experiment = prepared.instrument, prepared.experiment
    units: list[WorkUnit] = []
    for arm in experiment.arms:
        version = prepared.versions[arm.version]
        items = kind.work_items(version)
        size = unit_size(len(items), experiment.spec.batch_size)
        for seed in experiment.seeds:
            units += arm_seed_units(arm, seed, items, version.taskset, size)
    return units


def arm_seed_units(arm: ResolvedArm, seed: int, items: Any, taskset: str, batch_size: int) -> list[WorkUnit]:
    """The units of one arm under one seed: batches of ``batch_size`` of the version's work items."""
    return [WorkUnit(arm=arm, seed=seed, batch_index=index, batch=items[start:start + batch_size], taskset=taskset,
                     taskset_version=arm.version) for index, start in enumerate(range(0, len(items), batch_size))]


LEDGER_FILE = "run_ledger.sqlite"
"""The runs' budget ledger, in the warehouse's cache/ folder beside the result caches."""


def run_unit(unit: WorkUnit, ctx: RunContext) -> UnitResult:
    """Run one unit by its instrument: the plain function behind the flow's Prefect task."""
    unit_started(unit.label)
    try:
        result = instrument(unit.arm.instrument).run_unit(unit, ctx)
    finally:
        unit_done(unit.label)  # its items now count as landed (or the unit failed), not as in flight
    unit_landed(result.n_rows)
    reached("unit-landed", unit.label)  # its rows are cached and landed
    return result
