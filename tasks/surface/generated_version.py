"""A bundled task set written by its generator (tasksets/<name>/generate_tasks.py): the generator's files are
checked against the frozen version before anything is written (versions are never overwritten), then written
and frozen (``freeze_task_version``: the manifest with its hash)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from schemas.surface.task import TaskSetManifest
from tasks.files.input_errors import InputError
from tasks.surface.load_tasks import content_hash, freeze_task_version, task_paths


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
