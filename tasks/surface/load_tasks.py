"""Read a task-set version of multi-step tasks: ``tN.jsonl`` + ``tN.manifest.json`` + the shared
``fixtures/<name>.json`` its tasks include (docs/surface/writing-tasks.md: the folder's layout); freeze one; and
write the version a bundled generator makes (``write_version``: never over a frozen version with other files).
Every parse problem is an InputError naming the file, the line (and id) and the rule."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from schemas.surface.task import FIXTURE_INCLUDE_KEY, SurfaceTask, TaskSetManifest
from tasks.files.content_hash import parts_sha256
from tasks.files.input_errors import InputError, Problem
from tasks.files.json_lines import read_json_objects
from tasks.taskset.load_taskset import freeze_manifest, read_manifest, validation_message


def task_paths(taskset_dir: Path, version: str) -> dict[str, Path]:
    return {"tasks": Path(taskset_dir) / f"{version}.jsonl",
            "manifest": Path(taskset_dir) / f"{version}.manifest.json"}


def fixture_path(taskset_dir: Path, name: str) -> Path:
    return Path(taskset_dir) / "fixtures" / f"{name}.json"


def _includes(fixtures: dict[str, Any]) -> list[str]:
    include = fixtures.get(FIXTURE_INCLUDE_KEY) or []
    return [include] if isinstance(include, str) else list(include)


@dataclass(frozen=True)
class TaskLine:
    """A task and where it came from."""

    line: int
    task: SurfaceTask


@dataclass(frozen=True)
class TaskVersion:
    """A loaded version: tasks, manifest, the shared fixtures they include, and the hash of it all."""

    taskset: str
    version: str
    directory: Path
    lines: tuple[TaskLine, ...]
    manifest: TaskSetManifest
    shared_fixtures: dict[str, dict[str, Any]]
    actual_hash: str

    @property
    def tasks(self) -> tuple[SurfaceTask, ...]:
        return tuple(line.task for line in self.lines)

    @property
    def tasks_path(self) -> Path:
        return task_paths(self.directory, self.version)["tasks"]

    def fixtures(self, task: SurfaceTask) -> dict[str, Any]:
        """The task's fixtures with its shared files merged underneath (its own records win, per record id)."""
        return merge_fixtures([self.shared_fixtures[name] for name in _includes(task.fixtures)
                               if name in self.shared_fixtures], task.fixtures)


def merge_fixtures(shared: list[dict[str, Any]], own: dict[str, Any]) -> dict[str, Any]:
    """Collections of shared files, then the task's own: dict collections merge by key, others are replaced."""
    merged: dict[str, Any] = {}
    for layer in [*shared, own]:
        for collection, records in layer.items():
            if collection == FIXTURE_INCLUDE_KEY:
                continue
            if isinstance(records, dict) and isinstance(merged.get(collection), dict):
                merged[collection] = {**merged[collection], **records}
            else:
                merged[collection] = records
    return merged


def read_task_lines(path: Path) -> list[TaskLine]:
    """The tasks of a JSON Lines file; every bad line is reported with its number (and id when readable), and a
    file without a task (empty, or blank lines only) is refused (rule not-empty)."""
    lines: list[TaskLine] = []
    problems: list[Problem] = []
    for number, data in read_json_objects(path, problems, "tasks file"):
        try:
            lines.append(TaskLine(number, SurfaceTask.model_validate(data)))
        except ValidationError as error:
            where = f"line {number}" + (f" (id {data['id']})" if "id" in data else "")
            problems.append(Problem(str(path), where, "task-schema", validation_message(error)))
    if problems:
        raise InputError(problems)
    if not lines:
        raise InputError.one(str(path), "", "not-empty", "the tasks file holds no task: a version needs at least one")
    return lines


def included_files(lines: list[TaskLine]) -> list[str]:
    return sorted({name for line in lines for name in _includes(line.task.fixtures)})


def content_hash(taskset_dir: Path, version: str, fixture_names: list[str]) -> str:
    """sha256 over the tasks file and each shared fixture file it includes (missing files hash as empty)."""
    tasks = task_paths(taskset_dir, version)["tasks"]
    parts = [("tasks", tasks.read_bytes() if tasks.is_file() else b"")]
    for name in sorted(fixture_names):
        path = fixture_path(taskset_dir, name)
        parts.append((f"fixtures/{name}", path.read_bytes() if path.is_file() else b""))
    return parts_sha256(parts)


def read_shared_fixtures(taskset_dir: Path, names: list[str]) -> tuple[dict[str, dict[str, Any]], list[Problem]]:
    shared: dict[str, dict[str, Any]] = {}
    problems: list[Problem] = []
    for name in names:
        path = fixture_path(taskset_dir, name)
        if not path.is_file():
            continue  # reported per task by the checks (fixtures-include)
        try:
            data = json.loads(path.read_bytes())
        except json.JSONDecodeError as error:
            problems.append(Problem(str(path), f"line {error.lineno}", "json", error.msg))
            continue
        if not isinstance(data, dict):
            problems.append(Problem(str(path), "", "fixtures-schema", "a fixtures file is a JSON object of collections"))
            continue
        shared[name] = data
    return shared, problems


def load_task_version(taskset_dir: Path, version: str, manifest: TaskSetManifest | None = None) -> TaskVersion:
    """Read a version's files; schema problems raise here, the task rules are checked by ``task_checks``.
    ``manifest``: the one to check the files against instead of the version's file (one about to be frozen)."""
    taskset_dir = Path(taskset_dir).resolve()
    paths = task_paths(taskset_dir, version)
    manifest = manifest if manifest is not None else read_manifest(paths["manifest"], TaskSetManifest, paths["tasks"])
    lines = read_task_lines(paths["tasks"])
    names = included_files(lines)
    shared, problems = read_shared_fixtures(taskset_dir, names)
    if problems:
        raise InputError(problems)
    return TaskVersion(taskset=manifest.taskset, version=version, directory=taskset_dir, lines=tuple(lines),
                       manifest=manifest, shared_fixtures=shared,
                       actual_hash=content_hash(taskset_dir, version, names))


def freeze_task_version(taskset_dir: Path, version: str, slices: list[str], *, parent: str | None = None,
                        notes: str = "") -> TaskSetManifest:
    """Write ``<version>.manifest.json`` for the version's files as they are now; versions are immutable:
    an existing manifest whose hash differs is refused (write a new version)."""
    manifest = task_manifest(taskset_dir, version, slices, parent=parent, notes=notes)
    return freeze_manifest(task_paths(taskset_dir, version)["manifest"], TaskSetManifest, version,
                           manifest.content_hash, lambda actual: manifest)


def task_manifest(taskset_dir: Path, version: str, slices: list[str], *, parent: str | None = None,
                  notes: str = "") -> TaskSetManifest:
    """The manifest that freezes the version's files as they are now (not written)."""
    taskset_dir = Path(taskset_dir).resolve()
    lines = read_task_lines(task_paths(taskset_dir, version)["tasks"])
    names = included_files(lines)
    tasks = [line.task for line in lines]
    return TaskSetManifest(
        taskset=taskset_dir.name, version=version, parent=parent,
        created_at=datetime.now(timezone.utc).replace(microsecond=0), slices=slices,
        content_hash=content_hash(taskset_dir, version, names), n_tasks=len(tasks),
        counts_by_slice=dict(sorted(Counter(t.slice for t in tasks).items())),
        counts_by_intent=dict(sorted(Counter(t.intent for t in tasks if t.intent).items())),
        fixture_files=names, notes=notes)


def frozen_differs(folder: Path, version: str, files: dict[str, str], fixture_names: list[str]) -> str | None:
    """Why writing ``files`` (path relative to ``folder`` -> text) would change the frozen ``version`` (None: no
    manifest yet, or the same hash)."""
    manifest = task_paths(folder, version)["manifest"]
    if not manifest.is_file():
        return None
    frozen = json.loads(manifest.read_text())["content_hash"]
    with tempfile.TemporaryDirectory() as scratch:
        for relative, text in files.items():
            (Path(scratch) / relative).parent.mkdir(parents=True, exist_ok=True)
            (Path(scratch) / relative).write_text(text)
        wanted = content_hash(Path(scratch), version, fixture_names)
    if wanted == frozen:
        return None
    return (f"version {version} is frozen with hash {frozen[:12]}; the generator now writes files hashing to "
            f"{wanted[:12]}. Versions are never overwritten: write {_next(version)}.")


def _next(version: str) -> str:
    stem = version.rstrip("0123456789")
    return f"{stem}{int(version[len(stem):] or 0) + 1}"


def write_version(folder: Path, version: str, files: dict[str, str], fixture_names: list[str], slices: list[str],
                  notes: str) -> TaskSetManifest:
    """Write the files and freeze the version; InputError (version-immutable) before writing anything when the
    version is frozen with other files."""
    refused = frozen_differs(folder, version, files, fixture_names)
    if refused:
        raise InputError.one(str(task_paths(folder, version)["manifest"]), "", "version-immutable", refused)
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return freeze_task_version(folder, version, slices, notes=notes)
