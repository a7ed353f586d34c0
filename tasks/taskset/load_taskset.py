"""Read a task-set folder (its layout: docs/selection/experiments.md): catalogues, versions (requests +
adjudications + manifest), weights, prompts.

Every parse problem is an ``InputError`` naming the file, the line and the rule. The request table (polars,
``request_table.py``) is built when a loaded version's ``table`` is first read; ``TaskSetVersion.column``
reads a column of a version of one chunk or less without it, and a remembered label check
(tasks/taskset/check_cache.py) reads only the manifest and hashes the files.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence, TypeVar

from pydantic import BaseModel, ValidationError

from schemas.catalogue import PARAMETERS_PASSED, Catalogue, CatalogueFile, resolved_offered_as, rule_of
from schemas.taskset import Adjudication, LabelledRequest, ProductionWeights, VersionManifest
from tasks.files.atomic_write import write_exclusive
from tasks.files.content_hash import parts_sha256
from tasks.files.input_errors import InputError, Problem
from tasks.files.json_lines import bom_problem

if TYPE_CHECKING:
    import polars as pl

    from tasks.taskset.request_table import RequestRows

M = TypeVar("M", bound=BaseModel)


def validation_message(error: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'record'}: {e['msg']}" for e in error.errors())


def read_json_model(path: Path, model: type[M], context: dict | None = None) -> M:
    """One JSON file as one model (``context``: pydantic's validation context), or an InputError naming the file."""
    if not path.is_file():
        raise InputError.one(str(path), "", "file-exists", "file not found")
    try:
        return model.model_validate_json(path.read_bytes(), context=context)
    except ValidationError as error:
        raise InputError.one(str(path), "", rule_of(error), validation_message(error)) from None


def iter_jsonl_models(path: Path, model: type[M]) -> Iterator[tuple[int, M]]:
    """A JSON Lines file as (line number, model) pairs, validated one line at a time; once every line is
    read, an InputError lists each bad line with its number (nothing was yielded for those)."""
    if not path.is_file():
        raise InputError.one(str(path), "", "file-exists", "file not found")
    problems: list[Problem] = []
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            if number == 1 and (bom := bom_problem(path, raw)):  # named as such, not 'invalid JSON at column 1'
                problems.append(bom)
                continue
            try:
                record = model.model_validate_json(raw)
            except ValidationError as error:
                problems.append(Problem(str(path), f"line {number}", rule_of(error), validation_message(error)))
                continue
            yield number, record
    if problems:
        raise InputError(problems)


def read_jsonl_models(path: Path, model: type[M]) -> list[M]:
    """A JSON Lines file as models; every bad line is reported with its number."""
    return [record for _, record in iter_jsonl_models(path, model)]


def read_request_table(path: Path) -> pl.DataFrame:
    """A version's requests file as a request table (``request_table.py``): every line validated with
    ``LabelledRequest`` (bad lines reported with their numbers), only its columns kept."""
    return read_request_rows(path).frame


def read_request_rows(path: Path) -> RequestRows:
    """``read_request_table``'s rows, the table built when first read (``RequestRows``)."""
    from tasks.taskset.request_table import numbered_request_rows

    return numbered_request_rows(iter_jsonl_models(Path(path), LabelledRequest))


def load_catalogue(taskset_dir: Path, name: str, parameters_passed: bool = False) -> Catalogue:
    """Resolve a catalogue and the chain of catalogues it extends, inherited tools first. With
    ``parameters_passed`` (the chain's bytes passed before: ``catalogue_memo.load_checked_catalogue``) the tools'
    argument schemas are not checked against their metaschema again."""
    context = {PARAMETERS_PASSED: True} if parameters_passed else None
    chain: list[CatalogueFile] = []
    seen: set[str] = set()
    current: str | None = name
    while current is not None:
        path = taskset_dir / "catalogues" / f"{current}.json"
        if current in seen:
            raise InputError.one(str(path), "", "catalogue-extends", f"'extends' loops back to {current}")
        seen.add(current)
        file = read_json_model(path, CatalogueFile, context)
        if file.name != current:
            raise InputError.one(str(path), "", "catalogue-name", f"name '{file.name}' differs from file stem '{current}'")
        chain.append(file)
        current = file.extends
    tools = [tool for file in reversed(chain) for tool in file.tools]
    duplicates = [n for n, c in Counter(t.name for t in tools).items() if c > 1]
    if duplicates:
        path = taskset_dir / "catalogues" / f"{name}.json"
        raise InputError.one(str(path), "", "tool-names-unique", f"tools defined twice: {', '.join(sorted(duplicates))}")
    return Catalogue.model_validate(  # the context reaches the tools: pydantic checks a model's fields again here
        {"name": name, "tools": tuple(tools), "offered_as": resolved_offered_as(chain[::-1])}, context=context)


def version_paths(taskset_dir: Path, version: str) -> dict[str, Path]:
    return {
        "requests": taskset_dir / f"{version}.jsonl",
        "adjudications": taskset_dir / f"{version}.adjudications.jsonl",
        "manifest": taskset_dir / f"{version}.manifest.json",
    }


def version_hash(requests: bytes, adjudications: bytes) -> str:
    """The content hash of a version whose files hold these bytes (no adjudications file = empty)."""
    return parts_sha256((("requests", requests), ("adjudications", adjudications)))


def content_hash(taskset_dir: Path, version: str) -> str:
    """sha256 over the version's requests file and (if present) its adjudications file."""
    paths = version_paths(taskset_dir, version)
    requests, adjudications = (paths[key].read_bytes() if paths[key].is_file() else b""
                               for key in ("requests", "adjudications"))
    return version_hash(requests, adjudications)


@dataclass(frozen=True)
class TaskSetVersion:
    """A loaded task-set version: its requests, adjudications and manifest, and where they came from.

    ``requests`` reads as a sequence of ``LabelledRequest``: a loaded version keeps them as one columnar
    table (``RequestRows`` over ``table``, each request built when asked for); a draft may hold a tuple of
    models. The run path reads ``table``."""

    taskset: str
    version: str
    directory: Path
    requests: Sequence[LabelledRequest]
    adjudications: tuple[Adjudication, ...]
    manifest: VersionManifest
    actual_hash: str

    @property
    def requests_path(self) -> Path:
        return version_paths(self.directory, self.version)["requests"]

    @property
    def table(self) -> pl.DataFrame:
        """The requests as a request table (built from the models when the version holds models)."""
        from tasks.taskset.request_table import as_request_table

        return as_request_table(self.requests)

    def column(self, name: str) -> list:
        """One column of ``table`` as a list, without building the table when the version holds its rows."""
        from tasks.taskset.request_table import RequestRows

        if isinstance(self.requests, RequestRows):
            return self.requests.column(name)
        return self.table.get_column(name).to_list()


def read_manifest(path: Path, model: type[M], version_file: Path) -> M:
    """A version's manifest; a missing one is a version not frozen yet, and the error says how to freeze it."""
    if not path.is_file():
        shown = os.path.relpath(version_file) if Path(version_file).resolve().is_relative_to(Path.cwd()) else version_file
        raise InputError.one(str(path), "", "file-exists",
                             f"file not found: version {Path(version_file).stem} is not frozen yet; freeze it (its hash "
                             f"and counts in this manifest) with `tooleval freeze {shown}`")
    return read_json_model(path, model)


def load_manifest(taskset_dir: Path, version: str) -> VersionManifest:
    paths = version_paths(taskset_dir, version)
    return read_manifest(paths["manifest"], VersionManifest, paths["requests"])


def load_version(taskset_dir: Path, version: str, manifest: VersionManifest | None = None) -> TaskSetVersion:
    """Read a version's files; schema problems raise here, label rules are checked by ``label_checks``.
    ``manifest``: the one to check the files against instead of the version's file (one about to be frozen)."""
    paths = version_paths(taskset_dir, version)
    manifest = manifest if manifest is not None else load_manifest(taskset_dir, version)
    requests = read_request_rows(paths["requests"])
    adjudications = (
        read_jsonl_models(paths["adjudications"], Adjudication) if paths["adjudications"].is_file() else []
    )
    return TaskSetVersion(
        taskset=manifest.taskset,
        version=version,
        directory=taskset_dir,
        requests=requests,
        adjudications=tuple(adjudications),
        manifest=manifest,
        actual_hash=content_hash(taskset_dir, version),
    )


def load_weights(taskset_dir: Path, window: str) -> ProductionWeights:
    return read_json_model(taskset_dir / "weights" / f"{window}.json", ProductionWeights)


def load_prompt(taskset_dir: Path, name: str) -> str:
    path = taskset_dir / "prompts" / f"{name}.md"
    if not path.is_file():
        raise InputError.one(str(path), "", "prompt-exists", f"prompt '{name}' not found")
    return path.read_text()


def freeze_version(
    taskset_dir: Path,
    version: str,
    slices: list[str],
    *,
    parent: str | None = None,
    notes: str = "",
    window: str | None = None,
    sampling_seed: int | None = None,
) -> VersionManifest:
    """Write ``<version>.manifest.json`` for the version's files as they are now.

    Refuses to overwrite a manifest whose hash differs: versions are immutable; make a new one. The manifest
    is created whole and only if absent (``write_exclusive``).
    """
    manifest = version_manifest(taskset_dir, version, slices, parent=parent, notes=notes, window=window,
                                sampling_seed=sampling_seed)
    return freeze_manifest(version_paths(Path(taskset_dir), version)["manifest"], VersionManifest, version,
                           manifest.content_hash, lambda actual: manifest)


def version_manifest(taskset_dir: Path, version: str, slices: list[str], *, parent: str | None = None,
                     notes: str = "", window: str | None = None, sampling_seed: int | None = None) -> VersionManifest:
    """The manifest that freezes the version's files as they are now (not written)."""
    taskset_dir = Path(taskset_dir)
    requests = read_request_table(version_paths(taskset_dir, version)["requests"])
    return VersionManifest(
        taskset=taskset_dir.resolve().name, version=version, parent=parent,
        created_at=datetime.now(timezone.utc).replace(microsecond=0), slices=slices,
        content_hash=content_hash(taskset_dir, version), n_requests=requests.height,
        counts_by_label=dict(sorted(Counter(requests["expected"].to_list()).items())),
        window=window, sampling_seed=sampling_seed, notes=notes)


def freeze_manifest(path: Path, model: type[M], version: str, actual: str, build: Callable[[str], M]) -> M:
    """A version's manifest (a task-set version of either instrument): the one there when it holds the files'
    hash ``actual`` (versions are immutable: one that differs is refused, write a new version), else
    ``build(actual)``, created whole and only if absent (``write_exclusive``)."""
    if path.is_file():
        existing = read_json_model(path, model)
        if existing.content_hash != actual:
            raise InputError.one(
                str(path), "", "version-immutable",
                f"version {version} is frozen with hash {existing.content_hash[:12]}; its files now hash to "
                f"{actual[:12]}. Versions are never overwritten: write a new version.",
            )
        return existing
    manifest = build(actual)
    if not write_exclusive(path, manifest.model_dump_json(indent=2) + "\n"):
        # another writer froze the version meanwhile: accept its manifest if it holds the same hash
        return freeze_manifest(path, model, version, actual, build)
    return manifest
