"""A per-item cache of results (a request's selection, a task's outcome), so an unchanged rerun makes no
model call and a resumed run (``kill -9`` included) repeats no completed one. Keyed on everything that
changes a result (each instrument's cache key); results that say the call could not be made (a provider
error, the run's budget) are never stored. SQLite in WAL mode: safe for several processes on one machine.

When the disk fills up, SQLite may only say "disk I/O error" (its write-ahead log's index cannot grow);
such an error is raised as the OSError it is (ENOSPC, naming the cache file), so the run's message says
the disk is full and the I/O retry of the task applies."""

from __future__ import annotations

import errno
import functools
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Generic, Iterable, TypeVar

from pydantic import BaseModel

from tasks.files.sqlite_files import open_shared_sqlite
from tasks.files.write_probe import nearest_existing

_CHUNK = 500
_LOW_DISK_BYTES = 16 * 2**20

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class CacheSpec(Generic[M]):
    """One instrument's cache: its table and value column (kept as earlier versions wrote them, so existing
    caches keep answering), the model of its values, and which values may be kept."""

    table: str
    column: str
    model: type[M]
    keep: Callable[[M], bool]


def _as_os_error(path: Path | None, error: sqlite3.Error) -> BaseException:
    """The OSError an SQLite failure stands for (a full disk, a read-only file), else the error itself."""
    text = str(error).lower()
    if path is not None and ("disk is full" in text or "disk i/o error" in text):
        if "disk is full" in text or shutil.disk_usage(nearest_existing(Path(path).parent)).free < _LOW_DISK_BYTES:
            return OSError(errno.ENOSPC, f"No space left on device: the result cache could not be written "
                                         f"(SQLite: {error})", str(path))
    if path is not None and ("readonly" in text or "read-only" in text or "unable to open" in text):
        return OSError(errno.EROFS if "read" in text else errno.EACCES,
                       f"the result cache cannot be written (SQLite: {error})", str(path))
    return error


def _os_errors(method: Callable[..., T]) -> Callable[..., T]:
    @functools.wraps(method)
    def wrapped(self: "ResultCache", *args, **kwargs) -> T:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as error:
            converted = _as_os_error(self.path, error)
            if converted is error:
                raise
            raise converted from error
    return wrapped


class ResultCache(Generic[M]):
    """Open per use (cheap); ``path=None`` disables caching."""

    @_os_errors
    def __init__(self, path: Path | None, spec: CacheSpec[M]):
        self.path, self.spec = path, spec
        self._connection: sqlite3.Connection | None = None
        if path is not None:
            self._connection = open_shared_sqlite(path)
            self._connection.execute(f"CREATE TABLE IF NOT EXISTS {spec.table} "
                                     f"(key TEXT PRIMARY KEY, {spec.column} TEXT NOT NULL)")

    @_os_errors
    def get_many(self, keys: Iterable[str]) -> dict[str, M]:
        if self._connection is None:
            return {}
        keys = list(keys)
        found: dict[str, M] = {}
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start:start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for key, text in self._connection.execute(
                f"SELECT key, {self.spec.column} FROM {self.spec.table} WHERE key IN ({marks})", chunk
            ):
                found[key] = self.spec.model.model_validate_json(text)
        return found

    @_os_errors
    def put_many(self, items: Iterable[tuple[str, M]]) -> int:
        """Store the values that may be kept, in one transaction; returns how many were stored."""
        if self._connection is None:
            return 0
        rows = [(key, value.model_dump_json()) for key, value in items if self.spec.keep(value)]
        with self._connection:
            self._connection.execute("BEGIN")
            self._connection.executemany(f"INSERT OR REPLACE INTO {self.spec.table} VALUES (?, ?)", rows)
        return len(rows)

    @_os_errors
    def discard_many(self, keys: Iterable[str]) -> None:
        """Forget these keys (a stage kept until its finished result was cached)."""
        keys = list(keys)
        if self._connection is None or not keys:
            return
        with self._connection:
            self._connection.execute("BEGIN")
            self._connection.executemany(f"DELETE FROM {self.spec.table} WHERE key = ?", [(k,) for k in keys])

    def put(self, key: str, value: M) -> bool:
        """Store one value at once (it survives a kill the next instant); False when it may not be kept."""
        return self.put_many([(key, value)]) == 1

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> "ResultCache[M]":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
