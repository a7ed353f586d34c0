"""Create the report views from ``warehouse/views/*.sql`` (file name = view name), and before them the
macros they share from ``warehouse/macros.sql``."""

from __future__ import annotations

from pathlib import Path

import duckdb

VIEWS_DIR = Path(__file__).resolve().parent / "views"
MACROS_FILE = Path(__file__).resolve().parent / "macros.sql"


def view_files() -> dict[str, Path]:
    return {path.stem: path for path in sorted(VIEWS_DIR.glob("*.sql"))}


def create_macros(con: duckdb.DuckDBPyConnection, temporary: bool = False) -> None:
    """CREATE OR REPLACE every shared macro: persistent (stored in a DuckDB file like the views), or with
    ``temporary`` as TEMP macros of this connection only (a read-only connection to a file written before
    the macros existed, whose views are re-created as TEMP views)."""
    text = MACROS_FILE.read_text()
    if temporary:
        text = text.replace("CREATE OR REPLACE MACRO", "CREATE OR REPLACE TEMP MACRO")
    con.execute(text)


def create_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """CREATE OR REPLACE the shared macros, then every view; views that read other views are retried until
    all resolve."""
    create_macros(con)
    pending = view_files()
    created: list[str] = []
    while pending:
        attempted = len(pending)
        errors: dict[str, str] = {}
        for name, path in list(pending.items()):
            try:
                con.execute(f"CREATE OR REPLACE VIEW {name} AS\n{path.read_text()}")
            except duckdb.CatalogException as error:
                errors[name] = str(error)
                continue
            created.append(name)
            del pending[name]
        if len(errors) == attempted:
            raise RuntimeError(f"views that cannot be created: {errors}")
    return created
