"""A read-only connection to a warehouse file with this tooleval's views and macros, for every command that
only reads (report, compare, sql, phoenix): nothing is written to the file, and a file written by an older
tooleval still answers every view of this one.

A file stamped by this tooleval's definitions (warehouse/views.py) is read as it is: its stored views are
the current ones. Any other file gets the current views as temporary views (binding them all costs ~0.9 CPU
s), after its missing tables or columns are shadowed. Light on purpose: the tables' pydantic models and
pyarrow (~0.4 CPU s to import) are loaded only when a file needs shadowing.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

from tasks.files.input_errors import InputError
from warehouse.connect import connect
from warehouse.views import create_macros, stamp_found, view_files


def require_warehouse(db_path: Path, first: str = "tooleval run EXPERIMENT_FILE") -> None:
    """A warehouse file that is not there is bad input (naming the file and what makes one: ``first``)."""
    if not Path(db_path).is_file():
        raise InputError.one(str(db_path), "", "warehouse-exists",
                             f"no warehouse here: run `{first}` first, or give --warehouse DIR")


def open_read_only(db_path: Path, shadow_first: bool = True) -> duckdb.DuckDBPyConnection:
    """A read-only connection with the current view definitions as temporary views, so a warehouse
    written by an older tooleval still answers every view of this one (nothing is written to the file).

    ``shadow_first=False`` (``tooleval sql``) creates the views straight away and shadows older tables only
    when a view does not bind (a table or column of this version missing): a current file is read without
    importing the tables' models."""
    con = connect(db_path, read_only=True)  # waits (bounded) while a run's registration holds the file
    if stamp_found(con):  # made by this tooleval: its stored tables, macros and views are the current ones
        return con
    if shadow_first:
        shadow_older_tables(con)
    else:
        try:
            _create_temp_views(con)
            return con
        except duckdb.Error:
            con.close()
            con = connect(db_path, read_only=True)
            shadow_older_tables(con)
    _create_temp_views(con)
    return con


def _create_temp_views(con: duckdb.DuckDBPyConnection) -> None:
    create_macros(con, temporary=True)
    files = view_files()
    texts = {name: path.read_text() for name, path in files.items()}
    done: set[str] = set()

    def create(name: str) -> None:
        if name in done:
            return
        done.add(name)
        for other in texts:
            if other != name and re.search(rf"\b{re.escape(other)}\b", texts[name]):
                create(other)
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS\n{texts[name]}")

    for name in sorted(texts):
        create(name)


def shadow_older_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Make a file written by an older tooleval look like this one's, without writing to it: a table it
    lacks becomes an empty temporary table, a table lacking newer columns a temporary view that adds them
    as NULL (temporary objects come first in DuckDB's name resolution)."""
    from schemas.arrow import arrow_schema, create_table_sql, duckdb_type
    from warehouse.tables import TABLES

    catalog = con.execute("SELECT current_database()").fetchall()[0][0]
    present: dict[str, set[str]] = {}
    for table, column in con.execute("SELECT table_name, column_name FROM information_schema.columns "
                                     "WHERE table_schema = 'main' AND table_catalog = current_database()").fetchall():
        present.setdefault(table, set()).add(column)
    for table, model in TABLES.items():
        fields = list(arrow_schema(model))
        if table not in present:
            con.execute(create_table_sql(model, table).replace("CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE"))
        elif missing := [f for f in fields if f.name not in present[table]]:
            added = ", ".join(f"CAST(NULL AS {duckdb_type(f.type)}) AS {f.name}" for f in missing)
            con.execute(f'CREATE TEMP VIEW {table} AS SELECT *, {added} FROM "{catalog}".main.{table}')
