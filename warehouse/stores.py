"""Which tables, folders and cache each instrument keeps in a warehouse (``STORES``, by instrument name): names
only, so a reader finds a run's tables without importing the tables' pydantic models and pyarrow
(warehouse/tables.py, which re-exports these)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class InstrumentStore:
    """What one instrument keeps in a warehouse: registration writes these tables in one transaction."""

    run_table: str
    """One row per registered run (the run record)."""
    arm_table: str
    comparison_table: str
    landed: dict[str, str]
    """Tables of rows landed as Parquet by the work units -> the warehouse folder holding their partitions."""
    counts: dict[str, str]
    """Run-record columns filled at registration -> the landed table whose rows of the run they count."""
    cache_file: str
    """The per-item result cache under the warehouse's ``cache/`` folder (SQLite)."""
    records: tuple[str, ...] = ()
    """Other tables of a run's records, keyed by run (e.g. the seed orders)."""
    shared: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Tables that are not keyed by run -> the columns a registration replaces them by."""

    @property
    def run_tables(self) -> tuple[str, ...]:
        """Every table holding rows of a run: what registering it again replaces."""
        return (*self.landed, self.run_table, self.arm_table, self.comparison_table, *self.records)


STORES: dict[str, InstrumentStore] = {
    "selection": InstrumentStore(
        run_table="runs", arm_table="arms", comparison_table="comparisons", landed={"landed_rows": "rows"},
        counts={"n_rows": "landed_rows"}, cache_file="selections.sqlite", records=("seed_orders",),
        shared={"offered_tools": ("tool_set_id",), "production_weights": ("taskset", "window_id")}),
    "surface": InstrumentStore(
        run_table="task_experiments", arm_table="task_arms", comparison_table="task_comparisons",
        landed={"task_runs": "task_runs", "task_calls": "task_calls"},
        counts={"n_runs": "task_runs", "n_calls": "task_calls"}, cache_file="task_outcomes.sqlite"),
}
"""Each instrument's store, by instrument name (tasks/instruments.py)."""


def landed_folders() -> dict[str, str]:
    """Every landed table of every instrument -> its folder."""
    return {table: folder for store in STORES.values() for table, folder in store.landed.items()}
