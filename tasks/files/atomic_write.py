"""Write a file whole or not at all.

The data goes to a hidden ``.tmp-<unique>-<name>`` file beside the target, is flushed to disk (not for a
file whose reader recomputes it when it finds it damaged: ``durable=False``), and only then takes the
target's name: ``write_atomic`` renames it over the target (readers see the old file or the
new one, never a part), ``write_exclusive`` links it to a name that must not exist yet (the file is only
ever created, never replaced; of several writers racing for a name exactly one wins). A crash leaves at
most a hidden temporary file that no reader globs; every temporary name is unique, so any number of
processes may write at once. Plain Python: ``warehouse/`` uses it too (no Prefect here).
"""

from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Union

Content = Union[bytes, str, Callable[[Path], object]]
"""Bytes, text (written as UTF-8), or a function that writes the file at the path it is given
(e.g. ``lambda path: pq.write_table(table, path)``)."""

TEMPORARY_PREFIX = ".tmp-"


@contextmanager
def _complete_temporary(path: Path, content: Content, durable: bool = True) -> Iterator[Path]:
    """A temporary file beside ``path`` holding ``content``, on disk; removed afterwards if still there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.parent / f"{TEMPORARY_PREFIX}{uuid.uuid4().hex}-{path.name}"
    try:
        if callable(content):
            content(temporary)
        else:
            temporary.write_bytes(content.encode() if isinstance(content, str) else content)
        if durable:
            with open(temporary, "rb") as handle:
                os.fsync(handle.fileno())
        yield temporary
    finally:
        temporary.unlink(missing_ok=True)


def write_atomic(path: Path, content: Content, durable: bool = True) -> Path:
    """Create or replace ``path`` with ``content``, whole. ``durable=False`` skips the flush to disk: after
    a crash of the machine the file may be empty or partly zeros, for a cache whose reader detects that."""
    path = Path(path)
    with _complete_temporary(path, content, durable) as temporary:
        os.replace(temporary, path)
    return path


def write_exclusive(path: Path, content: Content) -> bool:
    """Create ``path`` holding ``content`` whole, or return False if it exists (never replaces a file)."""
    path = Path(path)
    with _complete_temporary(path, content) as temporary:
        try:
            os.link(temporary, path)
        except FileExistsError:
            return False
    return True
