"""The run's work: arm x seed x batch. A work unit is one Prefect task's worth of it, run by its instrument
(``Instrument.run_unit``), which lands the unit's rows as Parquet under the run's warehouse.

A unit carries a batch of its version's work items (``Instrument.work_items``: a slice of the request
table, a slice of the tasks), not one object per item: planning a 1M-row run holds the request table once
plus a few hundred bytes a unit. What each item needs for the unit's arm and seed (the tools in the seed's
order, the cache key) is worked out where the unit runs, and dropped with its rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tasks.drill_points import reached
from tasks.experiment.resolve_experiment import ResolvedArm
from tasks.instrument_registry import instrument
from tasks.run.item_counter import unit_done, unit_landed, unit_started
from warehouse.parquet_store import write_partition
from warehouse.stores import landed_folders

if TYPE_CHECKING:  # tracing is imported only by a run that traces; pyarrow only by a unit that lands rows
    import pyarrow as pa

    from tasks.run.prepare_run import PreparedRun
    from tasks.tracing.trace_target import TraceTarget


class WorkUnit:
    """A batch of one arm's work items under one seed.

    ``batch`` is a slice of the version's work items: in the planning process a zero-copy slice of the one
    table (or tuple); pickled (Dask and Ray workers), only its own items.

    A plain class on purpose, not a dataclass: Prefect walks dataclass and pydantic parameters field by
    field looking for futures, twice per task; an instance is a leaf to that walk.
    """

    __slots__ = ("arm", "seed", "batch_index", "batch", "taskset", "taskset_version")

    def __init__(self, *, arm: ResolvedArm, seed: int, batch_index: int, batch: Any, taskset: str,
                 taskset_version: str) -> None:
        self.arm = arm
        self.seed = seed
        self.batch_index = batch_index
        self.batch = batch
        self.taskset = taskset
        self.taskset_version = taskset_version

    def __repr__(self) -> str:
        return f"WorkUnit({self.label}, {self.n_items} items)"

    @property
    def label(self) -> str:
        return f"{self.arm.name}/seed={self.seed}/batch={self.batch_index}"

    @property
    def n_items(self) -> int:
        return len(self.batch)


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


def plan_units(prepared: "PreparedRun") -> list[WorkUnit]:
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


@dataclass(frozen=True)
class RunContext:
    """What every unit of one run shares."""

    run_id: str
    experiment: str
    warehouse: Path
    """The warehouse folder: each landed table's partitions lie in its folder below it."""
    cache_path: Path | None
    """The instrument's per-item result cache; None: no caching."""
    ledger_path: Path | None = None
    """The run's budget ledger (tasks/selectors/providers/call_budget.py), shared by every process; None keeps it in memory."""
    max_calls: int | None = None
    """Call cap of the run (hosted models), None for no cap."""
    max_spend_usd: float | None = None
    """Spend cap of the run in US dollars, None for no cap."""
    prefix_lanes: bool = True
    """Hosted arms (selectors and task agents): one (arm, seed) at a time per endpoint (``prefix_lanes``); off only
    to measure the difference (benchmarks/prefix_cache.py)."""
    trace: "TraceTarget | None" = None
    """Where the run's traces go (``--trace`` / the experiment's ``tracing:``); None: no tracing, no import."""

    def land(self, unit: WorkUnit, table: str, rows: pa.Table) -> Path:
        """Write one unit's rows of one landed table as its Parquet partition (atomic, named by the unit)."""
        return write_partition(self.warehouse / landed_folders()[table], self.run_id, unit.arm.name, unit.seed,
                               unit.batch_index, rows)


@dataclass(frozen=True)
class UnitResult:
    """What a unit did, for the run's summary and its progress line."""

    label: str
    n_rows: int
    """Items landed: selection rows, task runs."""
    n_ok: int
    """Of which good: correct selections, successful task runs."""
    n_cache_hits: int
    n_failures: int
    """Of which failed: invalid, error or empty rows; task runs that could not be carried out (a provider
    error, the run's budget, a failed surface)."""
    n_budget_stopped: int = 0
    """Of which not carried out because the run's spend or call cap was reached: rerun to resume."""
    paths: tuple[str, ...] = ()
    """The Parquet files landed."""


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
