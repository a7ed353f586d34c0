"""Open the warehouse's DuckDB file."""

from __future__ import annotations

from pathlib import Path

import duckdb

from warehouse.tables import create_tables
from warehouse.views import create_views


def connect(db_path: Path | str, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A connection; a writable one brings tables and views up to date first."""
    if read_only:
        return duckdb.connect(str(db_path), read_only=True)
    Path(db_path).parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(db_path))
    create_tables(con)
    create_views(con)
    return con
