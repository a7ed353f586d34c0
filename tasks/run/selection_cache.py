"""A per-request cache of selections, so an unchanged rerun makes no model call and a resumed run
repeats no completed one. Keyed on everything that changes an answer (see ``plan_units``); errors are
never stored. SQLite in WAL mode: safe for several processes on one machine."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Iterable

from schemas.rows import Selection
from tasks.files.sqlite_files import open_shared_sqlite

_SCHEMA = "CREATE TABLE IF NOT EXISTS selections (key TEXT PRIMARY KEY, selection TEXT NOT NULL)"
_CHUNK = 500


class SelectionCache:
    """Open per use (cheap); ``path=None`` disables caching."""

    def __init__(self, path: Path | None):
        self.path = path
        self._connection: sqlite3.Connection | None = None
        if path is not None:
            self._connection = open_shared_sqlite(path)
            self._connection.execute(_SCHEMA)

    def get_many(self, keys: Iterable[str]) -> dict[str, Selection]:
        if self._connection is None:
            return {}
        keys = list(keys)
        found: dict[str, Selection] = {}
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start:start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for key, text in self._connection.execute(
                f"SELECT key, selection FROM selections WHERE key IN ({marks})", chunk
            ):
                found[key] = Selection.model_validate_json(text)
        return found

    def put_many(self, items: Iterable[tuple[str, Selection]]) -> int:
        """Store selections that are not errors; returns how many were stored."""
        if self._connection is None:
            return 0
        rows = [(key, s.model_dump_json()) for key, s in items if s.outcome_hint != "error"]
        with self._connection:
            self._connection.execute("BEGIN")
            self._connection.executemany("INSERT OR REPLACE INTO selections VALUES (?, ?)", rows)
        return len(rows)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> "SelectionCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
