"""The project's small SQLite files (the selection cache, the call budget ledger): opened the same way by
every thread and process that shares them.

WAL mode is set once, when a file is new: switching the journal mode needs the file to itself, and SQLite
answers "database is locked" at once (its busy timeout does not cover that switch) when another
connection opens the file at the same moment. A file already in WAL mode is left as it is; the switch is
retried for a bounded time otherwise. A column added by a newer tooleval is added in place by whichever
opener comes first (``add_column_if_missing``).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

BUSY_TIMEOUT_S = 60.0


def open_shared_sqlite(path: Path | str, check_same_thread: bool = True) -> sqlite3.Connection:
    """A connection in autocommit mode with a busy timeout, the file in WAL mode."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                 check_same_thread=check_same_thread)
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.01
    while True:
        try:
            mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                connection.execute("PRAGMA journal_mode=WAL")
            break
        except sqlite3.OperationalError as error:
            if "locked" not in str(error).lower() or time.monotonic() > deadline:
                connection.close()
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.5)
    connection.execute("PRAGMA synchronous=NORMAL")
    return connection


def add_column_if_missing(connection: sqlite3.Connection, table: str, column: str, definition: str) -> None:
    """Give a file written before ``column`` existed that column. Every opener of a shared file (each work
    unit) looks at once, so another may add it between our look and our ALTER: that is the same outcome."""
    columns = {row[1] for row in connection.execute(f"PRAGMA table_info({table})").fetchall()}
    if column in columns:
        return
    try:
        connection.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")
    except sqlite3.OperationalError as error:
        if "duplicate column name" not in str(error):
            raise
