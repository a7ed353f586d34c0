"""Publish a new task-set version: checked in memory first, then written whole under the next free name.

Versions are immutable: a file is only ever created, never replaced. The next name (``v<N+1>``) is
claimed by creating its requests file with ``os.link`` from a complete temporary file, which fails when
another writer got there first (the loser takes the following name), so any number of processes may
publish at once. Publishing content identical to an existing version (same requests, adjudications and
parent) returns that version instead of writing a copy: a retried or repeated run adds nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from schemas.catalogue import Catalogue
from schemas.taskset import Adjudication, LabelledRequest, ProductionWeights, VersionManifest
from tasks.files.atomic_write import write_exclusive
from tasks.files.input_errors import InputError
from tasks.files.json_lines import jsonl_bytes
from tasks.taskset.label_checks import check_labels
from tasks.taskset.load_taskset import (TaskSetVersion, freeze_version, load_catalogue, read_json_model, version_hash,
                                        version_paths)

_VERSION = re.compile(r"^v(\d+)$")


def version_number(version: str) -> int:
    """``v12`` -> 12 (other names sort first)."""
    match = _VERSION.match(version)
    return int(match[1]) if match else -1


def version_numbers(taskset_dir: Path) -> list[int]:
    names = {p.name.split(".")[0] for p in Path(taskset_dir).glob("v*.jsonl")}
    names |= {p.name.split(".")[0] for p in Path(taskset_dir).glob("v*.manifest.json")}
    return sorted(int(m[1]) for name in names if (m := _VERSION.match(name)))


def manifests(taskset_dir: Path) -> dict[str, VersionManifest]:
    """Every frozen version of the task set, oldest number first."""
    found = {}
    for number in version_numbers(taskset_dir):
        path = version_paths(taskset_dir, f"v{number}")["manifest"]
        if path.is_file():
            found[f"v{number}"] = read_json_model(path, VersionManifest)
    return found


def all_catalogues(taskset_dir: Path) -> list[Catalogue]:
    return [load_catalogue(taskset_dir, p.stem) for p in sorted((Path(taskset_dir) / "catalogues").glob("*.json"))]


@dataclass(frozen=True)
class VersionDraft:
    """A version before it has a name on disk: what will be written and its manifest fields."""

    taskset_dir: Path
    requests: tuple[LabelledRequest, ...]
    adjudications: tuple[Adjudication, ...]
    slices: list[str]
    parent: str | None
    window: str | None
    sampling_seed: int | None
    notes: str

    @property
    def requests_bytes(self) -> bytes:
        return jsonl_bytes(list(self.requests))

    @property
    def adjudications_bytes(self) -> bytes:
        return jsonl_bytes(list(self.adjudications))

    @property
    def content_hash(self) -> str:
        return version_hash(self.requests_bytes, self.adjudications_bytes)

    def next_name(self) -> str:
        numbers = version_numbers(self.taskset_dir)
        return f"v{(numbers[-1] if numbers else 0) + 1}"

    def as_loaded(self, version: str | None = None) -> TaskSetVersion:
        """The draft as ``load_version`` would return it once written: the label checks run on this."""
        version = version or self.next_name()
        manifest = VersionManifest(
            taskset=Path(self.taskset_dir).resolve().name, version=version, parent=self.parent,
            created_at=datetime.now(timezone.utc).replace(microsecond=0), slices=self.slices,
            content_hash=self.content_hash, n_requests=len(self.requests), counts_by_label={},
            window=self.window, sampling_seed=self.sampling_seed, notes=self.notes,
        )
        return TaskSetVersion(taskset=manifest.taskset, version=version, directory=Path(self.taskset_dir),
                              requests=self.requests, adjudications=self.adjudications, manifest=manifest,
                              actual_hash=self.content_hash)


def check_draft(draft: VersionDraft, weights: ProductionWeights | None = None, weights_path: Path | None = None):
    """The Great Expectations label checks on the draft, before anything is written."""
    return check_labels(draft.as_loaded(), all_catalogues(draft.taskset_dir), weights, weights_path)


def identical_version(draft: VersionDraft) -> str | None:
    """An existing version with the same content and parent, if any."""
    for version, manifest in manifests(draft.taskset_dir).items():
        if manifest.content_hash == draft.content_hash and manifest.parent == draft.parent:
            return version
    return None


def publish(draft: VersionDraft) -> tuple[VersionManifest, bool]:
    """Write the draft as the next free version and freeze it; returns (manifest, reused)."""
    if existing := identical_version(draft):
        return read_json_model(version_paths(draft.taskset_dir, existing)["manifest"], VersionManifest), True
    requests_bytes, adjudications_bytes = draft.requests_bytes, draft.adjudications_bytes
    for _ in range(1000):
        version = draft.next_name()
        paths = version_paths(draft.taskset_dir, version)
        if paths["adjudications"].exists() or paths["manifest"].exists():
            raise InputError.one(str(paths["manifest"]), "", "version-immutable",
                                 f"{version} has an adjudications or manifest file but no requests file: "
                                 "a damaged version; move it away knowingly")
        if not write_exclusive(paths["requests"], requests_bytes):
            continue
        if adjudications_bytes and not write_exclusive(paths["adjudications"], adjudications_bytes):
            raise InputError.one(str(paths["adjudications"]), "", "version-immutable",
                                 f"{paths['adjudications'].name} appeared while {version} was being written")
        manifest = freeze_version(draft.taskset_dir, version, draft.slices, parent=draft.parent, notes=draft.notes,
                                  window=draft.window, sampling_seed=draft.sampling_seed)
        return manifest, False
    raise RuntimeError("no free version name after 1000 tries")
