"""Where a command's ``--out`` will write: refused with file and rule before any work when the nearest existing
folder above it is a file or takes no new file (else a raw ``[Errno ...]`` after the work)."""

from __future__ import annotations

import os
from pathlib import Path

from tasks.files.input_errors import InputError
from tasks.files.write_probe import nearest_existing, write_refusal


def check_out_path(out: str | os.PathLike[str]) -> None:
    """Raise ``InputError`` (rule ``out-writable``) unless ``out``'s folder exists or can be made, and takes a
    new file (probed: permissions, a read-only mount, a pseudo file system)."""
    path = Path(out)
    above = nearest_existing(path.parent)
    if not above.is_dir():
        raise InputError.one(str(path), "--out", "out-writable",
                             f"{above} is a file, so nothing can be written under it: give another --out")
    refusal = write_refusal(above)
    if refusal is not None:
        raise InputError.one(str(path), "--out", "out-writable",
                             f"{above} takes no new file ({refusal.strerror}): give another --out")
