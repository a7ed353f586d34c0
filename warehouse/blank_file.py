"""A new warehouse file starts as a copy of the blank one this tooleval made before: its tables, macros and
views with no rows, kept in the user's cache folder (tasks/files/cache_folder.py, ``warehouse``) under the
definitions stamp (warehouse/views.py), the DuckDB version and the storage format: copying it is cheaper
than creating the tables and binding every view. Nothing in the folder is needed: without a blank file (or
with one that does not open), the file is created and a blank copy of it kept for the next new warehouse."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb

from tasks.files.atomic_write import write_atomic, write_exclusive
from tasks.files.cache_folder import cache_folder


def blank_file(stamp: str, storage: str) -> Path:
    """Where the blank file of these definitions, this DuckDB and this storage format is kept."""
    return cache_folder("warehouse") / f"blank-{stamp[:32]}-duckdb{duckdb.__version__}-{storage}.duckdb"


def start_from_blank(db_path: Path, stamp: str, storage: str) -> bool:
    """Create ``db_path`` (which must not exist) as a copy of the kept blank file; False if there is none,
    or if another process created ``db_path`` first (it is left as it is)."""
    blank = blank_file(stamp, storage)
    try:
        return blank.is_file() and write_exclusive(db_path, lambda path: shutil.copyfile(blank, path))
    except OSError:  # an unreadable cache folder, a filesystem without hard links: the file is created instead
        return False


def keep_blank(con: duckdb.DuckDBPyConnection, db_path: Path, stamp: str, storage: str) -> None:
    """Keep a copy of ``db_path``, just created, as the blank file for the next new warehouse (checkpointed
    first, so the copy holds everything committed); not if it holds a row (another process wrote to it)."""
    try:
        [(rows,)] = con.execute("SELECT coalesce(sum(estimated_size), 0) FROM duckdb_tables()").fetchall()
        if rows:
            return
        con.execute("CHECKPOINT")
        write_atomic(blank_file(stamp, storage), lambda path: shutil.copyfile(db_path, path))
    except (OSError, duckdb.Error):  # a read-only or full cache folder: the next new warehouse is created too
        pass


def drop_blank(db_path: Path, stamp: str, storage: str) -> None:
    """Remove ``db_path``, copied from a blank file that does not open, and that blank file."""
    db_path.unlink(missing_ok=True)
    blank_file(stamp, storage).unlink(missing_ok=True)
