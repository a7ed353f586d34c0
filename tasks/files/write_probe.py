"""Can a folder take a new file now? One probe, shared by the checks before a run, a command's ``--out`` check
and the crash messages."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from tasks.files.input_errors import InputError

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


def check_out_path(out: str | os.PathLike[str]) -> None:
    """Where a command's ``--out`` will write, checked before any work: raise ``InputError`` (rule
    ``out-writable``) unless ``out``'s folder exists or can be made, and takes a new file (probed: permissions,
    a read-only mount, a pseudo file system), instead of a raw ``[Errno ...]`` after the work."""
    path = Path(out)
    above = nearest_existing(path.parent)
    if not above.is_dir():
        raise InputError.one(str(path), "--out", "out-writable",
                             f"{above} is a file, so nothing can be written under it: give another --out")
    refusal = write_refusal(above)
    if refusal is not None:
        raise InputError.one(str(path), "--out", "out-writable",
                             f"{above} takes no new file ({refusal.strerror}): give another --out")
