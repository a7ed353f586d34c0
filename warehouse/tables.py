"""The warehouse tables, each derived from its pydantic model (additive columns migrate themselves): every
registered instrument's row models (its card's ``row_models``); which tables, folders and cache each keeps is
its card's store (tasks/instrument_card.py)."""

from __future__ import annotations

import duckdb
from pydantic import BaseModel

from schemas.arrow import arrow_schema, create_table_sql, duckdb_type


def tables() -> dict[str, type[BaseModel]]:
    """Table -> its model, for every registered instrument (tasks/instrument_registry.py)."""
    from tasks.instrument_registry import cards

    return {table: model for card in cards().values() for table, model in card.row_models().items()}


def create_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create missing tables and add columns a newer model declares (never drops or retypes)."""
    for table, model in tables().items():
        con.execute(create_table_sql(model, table))
        existing = {row[0] for row in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()}
        for column in arrow_schema(model):
            if column.name not in existing:
                con.execute(f"ALTER TABLE {table} ADD COLUMN {column.name} {duckdb_type(column.type)}")
