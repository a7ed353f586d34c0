"""A per-request cache of selections, so an unchanged rerun makes no model call and a resumed run
repeats no completed one. Keyed on everything that changes an answer (see ``plan_units``); errors are
never stored. SQLite in WAL mode: safe for several processes on one machine.

When the disk fills up, SQLite may only say "disk I/O error" (its write-ahead log's index cannot grow);
such an error is raised as the OSError it is (ENOSPC, naming the cache file), so the run's message says
the disk is full and the I/O retry of the task applies."""

from __future__ import annotations

import errno
import functools
import shutil
import sqlite3
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from schemas.selection.rows import Selection
from tasks.files.sqlite_files import open_shared_sqlite

_SCHEMA = "CREATE TABLE IF NOT EXISTS selections (key TEXT PRIMARY KEY, selection TEXT NOT NULL)"
_CHUNK = 500
_LOW_DISK_BYTES = 16 * 2**20

T = TypeVar("T")


def _as_os_error(path: Path | None, error: sqlite3.Error) -> BaseException:
    """The OSError an SQLite failure stands for (a full disk, a read-only file), else the error itself."""
    text = str(error).lower()
    if path is not None and ("disk is full" in text or "disk i/o error" in text):
        existing = Path(path).parent
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if "disk is full" in text or shutil.disk_usage(existing).free < _LOW_DISK_BYTES:
            return OSError(errno.ENOSPC, f"No space left on device: the selection cache could not be written "
                                         f"(SQLite: {error})", str(path))
    if path is not None and ("readonly" in text or "read-only" in text or "unable to open" in text):
        return OSError(errno.EROFS if "read" in text else errno.EACCES,
                       f"the selection cache cannot be written (SQLite: {error})", str(path))
    return error


def _os_errors(method: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(method)
    def wrapped(self: "SelectionCache", *args, **kwargs) -> T:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as error:
            converted = _as_os_error(self.path, error)
            if converted is error:
                raise
            raise converted from error
    return wrapped


class SelectionCache:
    """Open per use (cheap); ``path=None`` disables caching."""

    @_os_errors
    def __init__(self, path: Path | None):
        self.path = path
        self._connection: sqlite3.Connection | None = None
        if path is not None:
            self._connection = open_shared_sqlite(path)
            self._connection.execute(_SCHEMA)

    @_os_errors
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

    @_os_errors
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
