"""A per-task cache of outcomes, so an unchanged rerun runs no agent turn and a run resumed after a crash
(``kill -9`` included) repeats no completed task. Keyed on everything that changes an outcome (see
``plan_task_units.task_cache_key``); outcomes that stopped on a provider error or the run's budget are
never stored. SQLite in WAL mode, one transaction per stored outcome: safe for several processes."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Iterable

from schemas.surface.rows import FAILED_STOPS, TaskOutcome

_SCHEMA = "CREATE TABLE IF NOT EXISTS task_outcomes (key TEXT PRIMARY KEY, outcome TEXT NOT NULL)"
_CHUNK = 500


def cacheable(outcome: TaskOutcome) -> bool:
    return outcome.stop_reason not in FAILED_STOPS


class TaskCache:
    """Open per use; ``path=None`` disables caching. Use from one thread."""

    def __init__(self, path: Path | None):
        self._connection: sqlite3.Connection | None = None
        if path is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._connection = sqlite3.connect(str(path), timeout=60, isolation_level=None)
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute("PRAGMA synchronous=NORMAL")
            self._connection.execute(_SCHEMA)

    def get_many(self, keys: Iterable[str]) -> dict[str, TaskOutcome]:
        if self._connection is None:
            return {}
        keys = list(keys)
        found: dict[str, TaskOutcome] = {}
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start:start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for key, text in self._connection.execute(
                    f"SELECT key, outcome FROM task_outcomes WHERE key IN ({marks})", chunk):
                found[key] = TaskOutcome.model_validate_json(text)
        return found

    def put(self, key: str, outcome: TaskOutcome) -> bool:
        """Store one outcome at once (it survives a kill the next instant); False when it is not cacheable."""
        if self._connection is None or not cacheable(outcome):
            return False
        self._connection.execute("INSERT OR REPLACE INTO task_outcomes VALUES (?, ?)", (key, outcome.model_dump_json()))
        return True

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> "TaskCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
