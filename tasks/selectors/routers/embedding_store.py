"""Embeddings kept on disk by content, so no process encodes a text another one already encoded.

Each unit vector is kept under (model fingerprint, sha256 of the text) in one SQLite file per model
fingerprint in the user's cache folder (``<cache>/embeddings/<fingerprint>.sqlite``). The fingerprint covers
the model's files (every name and size, the bytes of its small configuration files and blocks spread over
each weights file, so a fine-tuned copy of a model is another model) and the versions of
sentence-transformers, transformers and torch, so another model or library that could encode differently
never reads these vectors. A text whose vector is on disk is not encoded, and when none is missing the model
is not even loaded.

``TOOLEVAL_EMBEDDING_CACHE=off`` turns it off (every text is encoded, nothing is kept). A cache that cannot
be written (a read-only home) is simply not used.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
from importlib import metadata
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

from tasks.files.cache_folder import cache_folder
from tasks.files.sqlite_files import open_shared_sqlite

SMALL_FILE_BYTES = 1 << 20
"""Model files up to this size (configuration, tokenizer) enter the fingerprint whole; larger ones (the
weights) by name, size and ``SAMPLED_BLOCKS`` blocks of their bytes spread over the file."""
SAMPLED_BLOCKS = 16
"""Blocks of 64 KiB read from a weights file, evenly spaced from its start to its end: two fine-tunings of one
model have the same file names and sizes, and only their bytes tell them apart."""
_BLOCK = 1 << 16
_CHUNK = 500


def enabled() -> bool:
    return os.environ.get("TOOLEVAL_EMBEDDING_CACHE", "on").strip().lower() not in ("off", "0", "no", "false")


def model_fingerprint(model_path: str) -> str:
    """What the vectors of the model at ``model_path`` depend on, hashed: its files and the libraries."""
    return hashlib.sha256(f"{files_fingerprint(model_path)}\0{_library_versions()}".encode()).hexdigest()


def is_model_folder(path: Path) -> bool:
    """A sentence-transformers model directory: one with ``modules.json`` (what ``SentenceTransformer.save``
    writes and loading reads first)."""
    return (path / "modules.json").is_file()


def files_fingerprint(model_path: str) -> str:
    """The model directory's files hashed (names, sizes, small files whole, sampled blocks of the weights):
    what a decision model file records of a local encoder, to refuse it once the directory holds other
    weights. Read again only when a file's size or modification time changed."""
    root = Path(model_path)
    files = [(p, p.stat()) for p in sorted(root.rglob("*")) if p.is_file()]
    listing = tuple((str(p.relative_to(root)), st.st_size, st.st_mtime_ns) for p, st in files)
    return _files_fingerprint(model_path, listing)


@functools.lru_cache(maxsize=16)
def _files_fingerprint(model_path: str, listing: tuple[tuple[str, int, int], ...]) -> str:
    digest = hashlib.sha256()
    root = Path(model_path)
    for name, size, _ in listing:
        digest.update(f"{name}\0{size}\0".encode())
        path = root / name
        if size <= SMALL_FILE_BYTES:
            digest.update(path.read_bytes())
        else:
            with path.open("rb") as handle:
                for block in range(SAMPLED_BLOCKS):
                    handle.seek((size - _BLOCK) * block // (SAMPLED_BLOCKS - 1))
                    digest.update(handle.read(_BLOCK))
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def _library_versions() -> str:
    versions = {}
    for package in ("sentence-transformers", "transformers", "torch"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return json.dumps(versions, sort_keys=True)


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class EmbeddingStore:
    """The vectors of one model on disk; open per use (cheap)."""

    def __init__(self, model_path: str, folder: Path | None = None) -> None:
        self.path = (folder or cache_folder("embeddings")) / f"{model_fingerprint(model_path)[:32]}.sqlite"
        self._connection: sqlite3.Connection | None = None
        if not enabled():
            return
        try:
            self._connection = open_shared_sqlite(self.path)
            self._connection.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        except (OSError, sqlite3.Error):
            self.close()

    def get_many(self, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored vector of each text that has one."""
        if self._connection is None:
            return {}
        by_key = {text_key(text): text for text in texts}
        keys = list(by_key)
        found: dict[str, np.ndarray] = {}
        try:
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start:start + _CHUNK]
                rows = self._connection.execute(
                    f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk)
                for key, blob in rows:
                    found[by_key[key]] = np.frombuffer(blob, dtype=np.float32)
        except sqlite3.Error:
            return found
        return found

    def put_many(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Keep these vectors (one transaction); a store that cannot be written keeps nothing."""
        if self._connection is None or not vectors:
            return
        rows = [(text_key(text), np.asarray(vector, dtype=np.float32).tobytes()) for text, vector in vectors.items()]
        try:
            with self._connection:
                self._connection.execute("BEGIN")
                self._connection.executemany("INSERT OR IGNORE INTO vectors VALUES (?, ?)", rows)
        except sqlite3.Error:
            pass

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> "EmbeddingStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
