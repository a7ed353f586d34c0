"""A private, read-only snapshot of the warehouse file for a long reading session (``tooleval sql``), so an
open session never makes a run's registration wait (docs/warehouse/analysts.md). The file (and its
write-ahead log, if any) is copied while a read-only connection holds DuckDB's lock: no writer is half-way
through a transaction, so the copy is consistent; the session then reads the copy.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from warehouse.connect import _say_waiting, open_file

WAL_SUFFIX = ".wal"


@dataclass(frozen=True)
class Snapshot:
    """A copy of the warehouse file, and how long the original was held to take it."""

    source: Path
    path: Path
    taken_at: datetime
    held_s: float
    """Seconds the original file was held (read-only) to copy it, its opening and closing included."""
    size_bytes: int


def take_snapshot(db_path: Path | str, into_dir: Path | str, wait_s: float | None = None) -> Snapshot:
    """Copy ``db_path`` (and ``db_path.wal``) into ``into_dir`` while holding a read-only lock on it.

    Waits (bounded, as every reader does) while a run's registration holds the file."""
    source = Path(db_path)
    target = Path(into_dir) / source.name
    waited: list[str] = []

    def on_wait(message: str) -> None:
        waited.append(message)
        _say_waiting(message)

    opening = time.monotonic()
    con = open_file(source, read_only=True, wait_s=wait_s, on_wait=on_wait)
    started = time.monotonic() if waited else opening  # the opening holds the file too, the waiting does not
    try:
        shutil.copyfile(source, target)
        wal = source.with_name(source.name + WAL_SUFFIX)
        if wal.is_file():
            shutil.copyfile(wal, target.with_name(target.name + WAL_SUFFIX))
    finally:
        con.close()
    held = time.monotonic() - started
    return Snapshot(source=source, path=target, taken_at=datetime.now(timezone.utc).replace(microsecond=0),
                    held_s=held, size_bytes=target.stat().st_size)


class SnapshotDir:
    """A temporary folder for snapshots, removed when the session ends (``with SnapshotDir() as d``)."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="tooleval-sql-"))
        self._count = 0

    def next_dir(self) -> Path:
        """A fresh sub-folder per snapshot: an older snapshot may still be open while the next is taken."""
        self._count += 1
        directory = self.path / str(self._count)
        directory.mkdir()
        return directory

    def __enter__(self) -> "SnapshotDir":
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
