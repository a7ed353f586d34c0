"""Create the report views from ``warehouse/views/*.sql`` (file name = view name)."""

from __future__ import annotations

from pathlib import Path

import duckdb

VIEWS_DIR = Path(__file__).resolve().parent / "views"


def view_files() -> dict[str, Path]:
    return {path.stem: path for path in sorted(VIEWS_DIR.glob("*.sql"))}


def create_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """CREATE OR REPLACE every view; views that read other views are retried until all resolve."""
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
