"""The warehouse tables, each derived from its pydantic model (additive columns migrate themselves), and which
tables, folders and cache each instrument keeps in a warehouse."""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
from pydantic import BaseModel

from schemas.arrow import arrow_schema, create_table_sql, duckdb_type
from schemas.run_records import ComparisonRecord
from schemas.selection.rows import (
    OfferedTool,
    SeedOrder,
    SelectionArmRecord,
    SelectionRow,
    SelectionRunRecord,
    WeightRecord,
)
from schemas.surface.rows import SurfaceArmRecord, SurfaceRunRecord, TaskCallRow, TaskRunRow

TABLES: dict[str, type[BaseModel]] = {
    "landed_rows": SelectionRow,
    "runs": SelectionRunRecord,
    "arms": SelectionArmRecord,
    "comparisons": ComparisonRecord,
    "seed_orders": SeedOrder,
    "offered_tools": OfferedTool,
    "production_weights": WeightRecord,
    # tasks done on a tool surface (issue 9): one row per (run, arm, seed, task), one per call, the registers
    "task_runs": TaskRunRow,
    "task_calls": TaskCallRow,
    "task_experiments": SurfaceRunRecord,
    "task_arms": SurfaceArmRecord,
    "task_comparisons": ComparisonRecord,
}


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


def create_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create missing tables and add columns a newer model declares (never drops or retypes)."""
    for table, model in TABLES.items():
        con.execute(create_table_sql(model, table))
        existing = {row[0] for row in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()}
        for column in arrow_schema(model):
            if column.name not in existing:
                con.execute(f"ALTER TABLE {table} ADD COLUMN {column.name} {duckdb_type(column.type)}")
