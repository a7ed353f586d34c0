"""Passed label checks remembered by content, so a frozen version is checked by Great Expectations once.

A task-set version is immutable and hashed; the label checks are a pure function of its files, its
parent's labels, the catalogue tools in use, the weights, the rules (this package's source) and the Great
Expectations version. A pass is kept under that key in the user's cache folder (tasks/files/cache_folder.py);
a run or a ``tooleval validate`` of the same content then answers at once without importing Great Expectations.
Failures are never kept: a broken version is checked, and its problems listed, every time.

The key needs the version's manifest and content hash, not its requests: ``tooleval validate`` of a remembered
version (``content_check_key``) reads no request table (polars) and imports none of the checks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from schemas.taskset import ProductionWeights, VersionManifest
from tasks.files.atomic_write import write_atomic
from tasks.files.cache_folder import cache_folder
from tasks.files.content_hash import sha256_hex
from tasks.taskset.load_taskset import TaskSetVersion, content_hash, version_paths

if TYPE_CHECKING:
    from schemas.catalogue import Catalogue

RULES_SOURCES = ("label_checks.py", "argument_checks.py", "check_cache.py", "load_taskset.py", "request_table.py")


@dataclass(frozen=True)
class CheckReport:
    """What the checks looked at, for the CLI and the flow log."""

    n_requests: int
    n_expectations: int
    n_weights: int
    cached: bool = False
    """The same content passed before: Great Expectations was not run again."""


def cache_dir() -> Path:
    return cache_folder("label-checks")


def check_key(version: TaskSetVersion, catalogues: Iterable[Catalogue], weights: ProductionWeights | None) -> str:
    """Everything the checks' answer depends on, hashed: contents, never paths, so a task set copied or moved
    elsewhere is remembered too (a pass names no path; a failure, which does, is never kept)."""
    return content_check_key(version.directory, version.manifest, version.actual_hash,
                             [name for catalogue in catalogues for name in catalogue.label_names], weights)


def content_check_key(directory: Path, manifest: VersionManifest, actual_hash: str, tool_names: Iterable[str],
                      weights: ProductionWeights | None) -> str:
    """``check_key`` of the version in ``directory`` with this manifest and content hash (``content_hash``) and
    the catalogues' ``tool_names``, without its loaded requests or catalogues."""
    here = Path(__file__).parent
    parent = manifest.parent
    parent_hash = None
    if parent and version_paths(directory, parent)["requests"].is_file():
        parent_hash = content_hash(directory, parent)
    try:
        gx_version = metadata.version("great_expectations")
    except metadata.PackageNotFoundError:
        gx_version = None
    parts = {
        "rules": [sha256_hex((here / name).read_bytes()) for name in RULES_SOURCES],
        "gx": gx_version,
        "version": [actual_hash, manifest.model_dump(mode="json")],
        "parent": [parent, parent_hash],
        "tools": sorted(set(tool_names)),
        "weights": weights.model_dump(mode="json") if weights is not None else None,
    }
    return sha256_hex(json.dumps(parts, sort_keys=True, default=str))


def recall(key: str, directory: Path | None = None) -> dict | None:
    """The pass kept under ``key`` in ``directory`` (default: the label checks' folder), or None."""
    path = (directory or cache_dir()) / f"{key}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def recall_report(key: str) -> CheckReport | None:
    """The remembered pass under ``key``, as the checks' report (``cached``)."""
    passed = recall(key)
    return None if passed is None else CheckReport(**{**passed, "cached": True})


def remember(key: str, passed: dict, directory: Path | None = None) -> None:
    """Keep a pass in ``directory`` (default: the label checks' folder); a cache that cannot be written
    (read-only home) is simply not used."""
    directory = directory or cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        write_atomic(directory / f"{key}.json", json.dumps(passed))
    except OSError:
        pass
