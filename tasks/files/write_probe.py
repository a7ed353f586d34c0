"""Can a folder take a new file now? One probe, shared by the checks before a run and the crash messages."""

from __future__ import annotations

import errno
import tempfile
from pathlib import Path

REFUSED_WRITE_ERRNOS = frozenset({errno.EACCES, errno.EROFS, errno.EPERM})
"""The errno values of a write refused by permissions, a read-only mount or an immutable file."""


def nearest_existing(path: Path) -> Path:
    """``path`` itself, or the closest folder above it that exists (where a new file under ``path`` would land)."""
    path = Path(path)
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def write_refusal(folder: Path) -> OSError | None:
    """The error a new file in ``folder`` meets, or None when one can be made; the probe file (a temporary
    file named ``.tooleval-write-check-*``) is removed at once, so nothing stays."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".tooleval-write-check-"):
            pass
    except OSError as error:
        return error
    return None
