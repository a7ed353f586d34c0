"""The project's small SQLite files (the selection cache, the call budget ledger): opened the same way by
every thread and process that shares them.

They use a rollback journal (``TRUNCATE``), not WAL: a write through WAL's memory-mapped ``-shm`` index to a
file that stopped accepting writes kills the process with SIGBUS, where a rollback journal's ``write()`` gets
an error the run reports (docs/reliability/index.md). The writes are one short transaction per work unit or
per call, so readers waiting out a commit under the busy timeout cost nothing next to a model call.

The journal mode is set when a file is opened: switching needs the file to itself, and SQLite answers
"database is locked" at once (its busy timeout does not cover that switch) when another connection has it
open. An older file in WAL mode is switched by the first opener that has it to itself; until then it is
used as it is. A column added by a newer tooleval is added in place by whichever opener comes first
(``add_column_if_missing``).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

BUSY_TIMEOUT_S = 60.0
JOURNAL_MODE = "truncate"


def open_shared_sqlite(path: Path | str, check_same_thread: bool = True) -> sqlite3.Connection:
    """A connection in autocommit mode with a busy timeout, the file in rollback-journal mode."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                 check_same_thread=check_same_thread)
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.01
    while True:
        try:
            mode = str(connection.execute("PRAGMA journal_mode").fetchone()[0]).lower()
            if mode != JOURNAL_MODE:
                connection.execute(f"PRAGMA journal_mode={JOURNAL_MODE}")
            break
        except sqlite3.OperationalError as error:
            if "locked" in str(error).lower() and mode == "wal":
                break  # an older WAL file another connection has open: used as it is, switched another time
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


@contextmanager
def immediate_transaction(connection: sqlite3.Connection, lock: threading.Lock) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` transaction on an autocommit connection, under the opener's thread lock:
    committed when the block ends, rolled back when it raises."""
    with lock:
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield connection
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
