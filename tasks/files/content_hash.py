"""sha256 content hashes, written as hex: of bytes or text, of a file (streamed), of named parts."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterable

CHUNK = 1 << 20


def sha256_hex(data: bytes | str) -> str:
    """The sha256 of ``data`` (text as UTF-8)."""
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def parts_sha256(parts: Iterable[tuple[str, bytes]]) -> str:
    """One sha256 over named parts in order: each part's name, then its bytes."""
    digest = hashlib.sha256()
    for name, data in parts:
        digest.update(name.encode())
        digest.update(data)
    return digest.hexdigest()
