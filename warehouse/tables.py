"""The warehouse tables, each derived from its pydantic model (additive columns migrate themselves); which
tables, folders and cache each instrument keeps is warehouse/stores.py (re-exported here)."""

from __future__ import annotations

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
from warehouse.stores import STORES, InstrumentStore, landed_folders  # noqa: F401 (re-exported)

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


def create_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create missing tables and add columns a newer model declares (never drops or retypes)."""
    for table, model in TABLES.items():
        con.execute(create_table_sql(model, table))
        existing = {row[0] for row in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()}
        for column in arrow_schema(model):
            if column.name not in existing:
                con.execute(f"ALTER TABLE {table} ADD COLUMN {column.name} {duckdb_type(column.type)}")
