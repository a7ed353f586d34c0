"""Open the warehouse's DuckDB file, waiting a bounded time while another process holds it.

DuckDB lets one process write a file, or many read it: an analyst's open connection (even read-only) or
another run's registration makes a writer's connect fail at once with "Could not set lock". A writer here
waits for the file (``TOOLEVAL_LOCK_WAIT_S``, default 120 s), says so once, and then raises
``WarehouseBusy``: the run's rows are landed as Parquet and its registration is kept on disk, so
``tooleval register RUN_ID`` (or the next run) registers it without selecting again. Readers wait the same
way for a writer's short transaction.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
import time
from pathlib import Path
from typing import Callable

import duckdb


STORAGE_COMPATIBILITY = "v1.5.0"
"""The storage format a new warehouse file is written in: the one the project's DuckDB shell (the ``analyst``
extra's ``duckdb-cli``, the newest CLI on PyPI) reads, so an analyst can open the file in it. A file written
before in a newer format keeps that format (the shell cannot open it; ``tooleval sql`` can)."""

LOCK_WAIT_ENV = "TOOLEVAL_LOCK_WAIT_S"
DEFAULT_LOCK_WAIT_S = 120.0


class WarehouseBusy(RuntimeError):
    """Another process held the DuckDB file for longer than the bounded wait."""

    def __init__(self, db_path: Path | str, waited_s: float, detail: str) -> None:
        self.db_path, self.waited_s, self.detail = Path(db_path), waited_s, detail
        super().__init__(f"{db_path} was held by {detail} for {waited_s:.0f} s")


class WarehouseUnreadable(RuntimeError):
    """The file is not a DuckDB database this DuckDB can open (corrupt, truncated, another format)."""


def lock_wait_s() -> float:
    try:
        return max(0.0, float(os.environ.get(LOCK_WAIT_ENV, DEFAULT_LOCK_WAIT_S)))
    except ValueError:
        return DEFAULT_LOCK_WAIT_S


def is_lock_conflict(error: BaseException) -> bool:
    text = str(error).lower()
    return "could not set lock" in text or "conflicting lock" in text


def _say_waiting(message: str) -> None:
    """On stderr, folded at words to the terminal's width (COLUMNS when set; 100 off a terminal)."""
    print(textwrap.fill(message, width=max(shutil.get_terminal_size((100, 24)).columns, 40), subsequent_indent="  ",
                        break_long_words=False, break_on_hyphens=False), file=sys.stderr, flush=True)


def open_file(db_path: Path | str, read_only: bool, wait_s: float | None = None,
              on_wait: Callable[[str], None] = _say_waiting) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect`` that waits (bounded) while another process holds the file."""
    wait_s = lock_wait_s() if wait_s is None else wait_s
    started = time.monotonic()
    pause, told = 0.1, False
    while True:
        try:
            return duckdb.connect(str(db_path), read_only=read_only, config={} if read_only else
                                  {"storage_compatibility_version": STORAGE_COMPATIBILITY})
        except duckdb.Error as error:
            if _unreadable(db_path, error):
                raise WarehouseUnreadable(f"damaged or not a DuckDB file: {str(error).splitlines()[0][:200]}") from None
            if not is_lock_conflict(error):
                raise
            waited = time.monotonic() - started
            if waited >= wait_s:
                raise WarehouseBusy(db_path, waited, _holder(error)) from None
            if not told:
                on_wait(f"tooleval: {db_path} is held by {_holder(error)}; waiting up to {wait_s:.0f} s "
                        f"({LOCK_WAIT_ENV}) ...")
                told = True
            time.sleep(min(pause, max(0.0, wait_s - waited)))
            pause = min(pause * 2, 2.0)


def _unreadable(db_path: Path | str, error: BaseException) -> bool:
    text = str(error).lower()
    return Path(db_path).is_file() and ("not a valid duckdb" in text or "corrupt" in text
                                        or "could not read enough bytes" in text  # truncated
                                        or "serialization" in type(error).__name__.lower())


def _holder(error: BaseException) -> str:
    """Who holds the lock, from DuckDB's message ('... held in /usr/bin/python3 (PID 7103)')."""
    match = re.search(r"held in (\S+) \(PID (\d+)\)", str(error))
    return f"process {match.group(2)} ({Path(match.group(1)).name})" if match else "another process"


def connect(db_path: Path | str, read_only: bool = False, wait_s: float | None = None) -> duckdb.DuckDBPyConnection:
    """A connection; a writable one brings tables and views up to date first (unless the file's stamp says
    they are: warehouse/views.py). A new file starts as a copy of the blank one (warehouse/blank_file.py)."""
    if read_only:
        return open_file(db_path, True, wait_s)
    from warehouse.blank_file import drop_blank, keep_blank, start_from_blank
    from warehouse.views import create_views, definitions_stamp, stamp_found, write_stamp

    db_path = Path(db_path)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    new = not db_path.exists()
    copied = new and start_from_blank(db_path, definitions_stamp(), STORAGE_COMPATIBILITY)
    try:
        con = open_file(db_path, False, wait_s)
    except WarehouseUnreadable:
        if not copied:
            raise
        drop_blank(db_path, definitions_stamp(), STORAGE_COMPATIBILITY)  # a damaged blank file: created instead
        copied, con = False, open_file(db_path, False, wait_s)
    if stamp_found(con):  # tables, macros and views made by this very tooleval: nothing to bring up to date
        return con
    from warehouse.tables import create_tables  # the tables' models: only a writer that migrates needs them

    con.execute("BEGIN TRANSACTION")  # one commit (one sync of the file) for every table, macro and view
    try:
        create_tables(con)
        create_views(con)
        write_stamp(con)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        con.close()
        raise
    if new and not copied:  # the next new warehouse starts as a copy of this one (warehouse/blank_file.py)
        keep_blank(con, db_path, definitions_stamp(), STORAGE_COMPATIBILITY)
    return con
