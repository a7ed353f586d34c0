"""A read-only connection to a warehouse file with this tooleval's views and macros, for every command that
only reads (report, compare, sql, phoenix): nothing is written to the file.

A file stamped by this tooleval's definitions (warehouse/views.py) is read as it is: its stored views are
the current ones. Any other file gets the current views as temporary views; a table it lacks (a file a
kill left half-created, before its first registration finished) is an empty temporary table first, so the
commands answer "no run is registered yet" instead of failing to bind a view.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from tasks.files.input_errors import InputError
from warehouse.connect import connect
from warehouse.views import create_macros, stamp_found, views_in_order


def require_warehouse(db_path: Path, first: str = "tooleval run EXPERIMENT_FILE") -> None:
    """A warehouse file that is not there is bad input (naming the file and what makes one: ``first``)."""
    if not Path(db_path).is_file():
        raise InputError.one(str(db_path), "", "warehouse-exists",
                             f"no warehouse here: run `{first}` first, or give --warehouse DIR")


def open_read_only(db_path: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection with the current view definitions: the file's own when it carries this
    tooleval's stamp, else the current ones as temporary views (nothing is written to the file)."""
    con = connect(db_path, read_only=True)  # waits (bounded) while a run's registration holds the file
    if not stamp_found(con):  # views of other definitions: this tooleval's, as temporary views
        _create_missing_tables(con)
        _create_temp_views(con)
    return con


def _create_missing_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Each table the file lacks, as an empty temporary table (nothing is written to the file)."""
    from schemas.arrow import create_table_sql
    from warehouse.tables import tables

    present = {row[0] for row in con.execute(
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_schema = 'main' AND table_catalog = current_database()").fetchall()}
    for table, model in tables().items():
        if table not in present:
            con.execute(create_table_sql(model, table).replace("CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE"))


def _create_temp_views(con: duckdb.DuckDBPyConnection) -> None:
    create_macros(con, temporary=True)
    for name, text in views_in_order():
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS\n{text}")
