"""A query's result as the report code reads it: a list of records (dicts by column name), or columns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the connection's owner imported DuckDB; a module naming these readers loads neither library
    import duckdb
    import polars as pl


def records(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> list[dict[str, Any]]:
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor.fetchall()]


def frame(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> pl.DataFrame:
    """A query's result as columns (through Arrow), for row counts that Python tuples would make costly."""
    import polars as pl  # here: an import that ``records``' readers (compare, the reports) never need

    return pl.from_arrow(con.sql(sql, params=params).to_arrow_table())
