"""The batch journal: a small SQLite file (beside the selection cache, like the run ledger) that holds what
was sent as a batch, so a process killed while waiting never sends it again.

Two tables. ``batch_chunks``: one row per batch, written as an *intent* (its custom ids and a hash of its
input) before the create call, its batch id written as soon as the call returns, then its state.
``batch_items``: one row per custom id, naming its chunk, and once the batch ended its outcome (status,
the reply's JSON as the provider sent it, the scrubbed error). A landed outcome is final: the item is
never submitted again. Nothing here is a secret: no key, no header; replies and scrubbed errors only.

Rows are keyed by endpoint (provider and base URL) and custom id, so one journal serves any number of
runs and servers.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ContextManager, Iterable, Iterator, Sequence

from tasks.files.sqlite_files import add_column_if_missing, immediate_transaction, open_shared_sqlite

_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS batch_chunks (
        chunk_key TEXT PRIMARY KEY, endpoint TEXT NOT NULL, model TEXT NOT NULL, n INTEGER NOT NULL,
        body_hash TEXT NOT NULL, batch_id TEXT, file_id TEXT, state TEXT NOT NULL,
        owner_pid INTEGER, owner_host TEXT, intent_at REAL NOT NULL, cancel_requested INTEGER NOT NULL DEFAULT 0,
        adopted INTEGER NOT NULL DEFAULT 0)""",
    """CREATE TABLE IF NOT EXISTS batch_items (
        endpoint TEXT NOT NULL, custom_id TEXT NOT NULL, chunk_key TEXT NOT NULL, body_hash TEXT NOT NULL,
        label TEXT NOT NULL DEFAULT '', status TEXT, reply TEXT, error TEXT, batch_id TEXT,
        PRIMARY KEY (endpoint, custom_id))""",
    "CREATE INDEX IF NOT EXISTS batch_items_chunk ON batch_items (chunk_key)",
]


def _in_parts(ids: Iterable[str]) -> Iterator[tuple[list[str], str]]:
    """The ids in parts of at most 500 (SQLite's bound on a statement's variables), each with its '?' marks."""
    ids = list(ids)
    for start in range(0, len(ids), 500):
        part = ids[start:start + 500]
        yield part, ",".join("?" * len(part))


def journal_path(cache_path: Path) -> Path:
    """Where a warehouse keeps its batch journal: beside the selection cache."""
    return Path(cache_path).parent / "batch_journal.sqlite"


@dataclass(frozen=True)
class Chunk:
    """One batch as the journal holds it."""

    chunk_key: str
    model: str
    custom_ids: tuple[str, ...]
    body_hash: str
    batch_id: str | None
    file_id: str | None
    state: str
    """'intent' (create not known to have returned), 'submitted', 'ended'."""
    owner_pid: int | None
    owner_host: str | None
    intent_at: float
    cancel_requested: bool
    adopted: bool = False
    """The batch id came from the provider's listing, not from the create call (its results confirm it)."""

    def owner_alive(self) -> bool:
        """The process that wrote the intent still runs on this machine (it may yet record the batch id)."""
        if self.owner_pid is None or self.owner_host != socket.gethostname() or self.owner_pid == os.getpid():
            return False
        try:
            os.kill(self.owner_pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


@dataclass(frozen=True)
class Landed:
    """An item's final outcome as stored."""

    custom_id: str
    status: str
    reply: dict[str, Any] | None
    error: str | None
    batch_id: str
    body_hash: str


class BatchJournal:
    """Open per process; ``path=None`` keeps the journal in memory (one process, e.g. a unit test)."""

    def __init__(self, path: Path | None):
        self.path = path
        self._lock = threading.Lock()
        self._con = (open_shared_sqlite(path, check_same_thread=False) if path is not None else
                     sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False))
        for statement in _SCHEMA:
            self._con.execute(statement)
        add_column_if_missing(self._con, "batch_chunks", "adopted", "INTEGER NOT NULL DEFAULT 0")

    def _transaction(self) -> ContextManager[sqlite3.Connection]:
        return immediate_transaction(self._con, self._lock)

    def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._con.execute(sql, list(params)).fetchall()

    # -- reading ------------------------------------------------------------------------------------------
    def open_chunks(self, label_prefix: str) -> list[tuple[str, str, str]]:
        """(chunk key, endpoint, batch id) of the batches holding items labelled ``label_prefix``... that have
        an id and have not ended, oldest intent first."""
        return [tuple(row) for row in self._rows(
            "SELECT DISTINCT c.chunk_key, c.endpoint, c.batch_id FROM batch_chunks c "
            "JOIN batch_items i ON i.chunk_key = c.chunk_key WHERE c.state != 'ended' AND c.batch_id IS NOT NULL "
            "AND substr(i.label, 1, ?) = ? ORDER BY c.intent_at", [len(label_prefix), label_prefix])]

    def landed(self, endpoint: str, custom_ids: Iterable[str]) -> dict[str, Landed]:
        """The final outcomes the journal holds for these ids."""
        found: dict[str, Landed] = {}
        for part, marks in _in_parts(custom_ids):
            for cid, status, reply, error, batch_id, body_hash in self._rows(
                    f"SELECT custom_id, status, reply, error, batch_id, body_hash FROM batch_items "
                    f"WHERE endpoint = ? AND status IS NOT NULL AND custom_id IN ({marks})", [endpoint, *part]):
                found[cid] = Landed(cid, status, json.loads(reply) if reply else None, error, batch_id or "",
                                    body_hash)
        return found

    def chunk_keys(self, endpoint: str, custom_ids: Iterable[str]) -> set[str]:
        """The chunks that hold any of these ids."""
        keys: set[str] = set()
        for part, marks in _in_parts(custom_ids):
            keys.update(row[0] for row in self._rows(
                f"SELECT DISTINCT chunk_key FROM batch_items WHERE endpoint = ? AND custom_id IN ({marks})",
                [endpoint, *part]))
        return keys

    def chunk(self, chunk_key: str) -> Chunk | None:
        rows = self._rows("SELECT model, body_hash, batch_id, file_id, state, owner_pid, owner_host, intent_at, "
                          "cancel_requested, adopted FROM batch_chunks WHERE chunk_key = ?", [chunk_key])
        if not rows:
            return None
        model, body_hash, batch_id, file_id, state, pid, host, intent_at, cancel, adopted = rows[0]
        ids = tuple(row[0] for row in self._rows(
            "SELECT custom_id FROM batch_items WHERE chunk_key = ? ORDER BY rowid", [chunk_key]))
        return Chunk(chunk_key, model, ids, body_hash, batch_id, file_id, state, pid, host, intent_at, bool(cancel),
                     bool(adopted))

    def item_hash(self, endpoint: str, custom_id: str) -> str | None:
        """The hash of the request journaled under this id (None when there is none)."""
        rows = self._rows("SELECT body_hash FROM batch_items WHERE endpoint = ? AND custom_id = ?",
                          [endpoint, custom_id])
        return rows[0][0] if rows else None

    def batch_ids(self, endpoint: str) -> set[str]:
        """Every batch id recorded for this endpoint (a batch found at the provider is adopted only if none
        of the journal's chunks holds it already)."""
        return {row[0] for row in self._rows("SELECT batch_id FROM batch_chunks WHERE endpoint = ? AND "
                                             "batch_id IS NOT NULL", [endpoint])}

    # -- writing ------------------------------------------------------------------------------------------
    def claim(self, endpoint: str, chunk_key: str, model: str, body_hash: str,
              items: Sequence[tuple[str, str, str]]) -> bool:
        """Write the intent of a new batch of ``items`` (custom id, body hash, label) before it is created;
        False (nothing written) when another chunk already holds one of the ids."""
        with self._transaction() as con:
            for part, marks in _in_parts(cid for cid, _, _ in items):
                if con.execute(f"SELECT 1 FROM batch_items WHERE endpoint = ? AND custom_id IN ({marks}) LIMIT 1",
                               [endpoint, *part]).fetchone():
                    return False
            con.execute("INSERT INTO batch_chunks (chunk_key, endpoint, model, n, body_hash, state, owner_pid, "
                        "owner_host, intent_at) VALUES (?, ?, ?, ?, ?, 'intent', ?, ?, ?)",
                        [chunk_key, endpoint, model, len(items), body_hash, os.getpid(), socket.gethostname(),
                         time.time()])
            con.executemany("INSERT INTO batch_items (endpoint, custom_id, chunk_key, body_hash, label) "
                            "VALUES (?, ?, ?, ?, ?)",
                            [(endpoint, cid, chunk_key, item_hash, label) for cid, item_hash, label in items])
        return True

    def record_file(self, chunk_key: str, file_id: str) -> None:
        with self._transaction() as con:
            con.execute("UPDATE batch_chunks SET file_id = ? WHERE chunk_key = ?", [file_id, chunk_key])

    def record_batch(self, chunk_key: str, batch_id: str, adopted: bool = False) -> None:
        """The batch id, as soon as the create call returned (or the batch was found at the provider:
        ``adopted``)."""
        with self._transaction() as con:
            con.execute("UPDATE batch_chunks SET batch_id = ?, state = 'submitted', adopted = ? WHERE chunk_key = ?",
                        [batch_id, int(adopted), chunk_key])
            con.execute("UPDATE batch_items SET batch_id = ? WHERE chunk_key = ?", [batch_id, chunk_key])

    def request_cancel(self, chunk_key: str) -> None:
        with self._transaction() as con:
            con.execute("UPDATE batch_chunks SET cancel_requested = 1 WHERE chunk_key = ?", [chunk_key])

    def release(self, chunk_key: str) -> None:
        """Forget a chunk the provider never accepted (the create call was refused): its items may be sent
        again."""
        with self._transaction() as con:
            con.execute("DELETE FROM batch_items WHERE chunk_key = ? AND status IS NULL", [chunk_key])
            con.execute("DELETE FROM batch_chunks WHERE chunk_key = ?", [chunk_key])

    def land(self, chunk_key: str, outcomes: Sequence[tuple[str, str, dict[str, Any] | None, str | None]]) -> None:
        """Store the final (custom id, status, reply JSON, error) of a chunk's items and mark it ended."""
        with self._transaction() as con:
            con.executemany("UPDATE batch_items SET status = ?, reply = ?, error = ? "
                            "WHERE chunk_key = ? AND custom_id = ? AND status IS NULL",
                            [(status, json.dumps(reply) if reply is not None else None, error, chunk_key, cid)
                             for cid, status, reply, error in outcomes])
            con.execute("UPDATE batch_chunks SET state = 'ended' WHERE chunk_key = ?", [chunk_key])

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> "BatchJournal":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
