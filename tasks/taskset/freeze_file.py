"""`tooleval freeze`: freeze a task-set version from the command line, for either instrument.

A version file is ``<taskset>/<version>.jsonl``: requests to select for (``v1.jsonl``, the selection
instrument) or, in a task-set folder with ``surfaces/``, multi-step tasks (``t1.jsonl``, tasks on a surface).
Freezing writes ``<version>.manifest.json`` beside it: the content hash of the version's files (requests and
adjudications; tasks and the shared fixture files they include), its slices, counts and parent. The version
is then immutable: a run, ``validate`` and ``tasks validate`` refuse files that no longer hash to it.

Before anything is written, the version goes through every check a run makes on it, against the manifest
about to be written; what is checked and what is refused is the command's help (docs/reference/cli.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.surface.task import TaskSetManifest
from schemas.taskset import FrozenVersion, VersionManifest
from tasks.files.input_errors import InputError
from tasks.files.json_lines import read_json_objects
from tasks.taskset.load_taskset import freeze_manifest, read_json_model

ADJUDICATIONS = ".adjudications"


@dataclass(frozen=True)
class Frozen:
    """What ``freeze_file`` did."""

    manifest: FrozenVersion
    path: Path
    """The manifest file."""
    written: bool
    """False: the version was already frozen with these files (nothing written)."""
    checked: str
    """What was checked, one line."""

    def lines(self) -> list[str]:
        m = self.manifest
        counts = (f"{m.n_tasks} tasks" if isinstance(m, TaskSetManifest) else f"{m.n_requests} requests")
        head = (f"froze {m.taskset} {m.version}: wrote {self.path}" if self.written
                else f"{m.taskset} {m.version} is already frozen with these files: {self.path} (nothing written)")
        return [head,
                f"  {counts}, slices {', '.join(m.slices)}" + (f", parent {m.parent}" if m.parent else "")
                + f"; hash {m.content_hash[:12]}",
                f"  checked: {self.checked}"]


def _slices_in_order(path: Path) -> list[str]:
    """The slices the version's lines name, in the order they first appear (the file parses: it was read)."""
    seen: dict[str, None] = {}
    for _, data in read_json_objects(path, [], "version file"):
        if isinstance(data.get("slice"), str):
            seen.setdefault(data["slice"], None)
    return list(seen)


def _selection(folder: Path, version: str, slices: list[str], parent: str | None, notes: str,
               against: list[str] | None) -> tuple[FrozenVersion, Any]:
    from tasks.taskset.load_taskset import load_catalogue, load_version, version_manifest

    manifest = version_manifest(folder, version, slices, parent=parent, notes=notes)

    def check() -> str:
        from tasks.taskset.label_checks import check_labels

        names = against or sorted(p.stem for p in (folder / "catalogues").glob("*.json"))
        report = check_labels(load_version(folder, version, manifest), [load_catalogue(folder, n) for n in names])
        return (f"{report.n_expectations} label expectations passed; catalogues: "
                f"{', '.join(names) or 'per-request tools only'}")
    return manifest, check


def _tasks(folder: Path, version: str, slices: list[str], parent: str | None, notes: str,
           against: list[str] | None) -> tuple[FrozenVersion, Any]:
    from tasks.surface.load_tasks import load_task_version, task_manifest

    manifest = task_manifest(folder, version, slices, parent=parent, notes=notes)

    def check() -> str:
        from tasks.surface.load_surface import load_surface
        from tasks.surface.task_checks import check_tasks

        names = against or sorted(p.stem for p in (folder / "surfaces").glob("*.yaml"))
        checked = check_tasks(load_task_version(folder, version, manifest), [load_surface(folder, n) for n in names])
        return f"{checked.n_tasks} tasks against {checked.n_surfaces} surface(s) ({', '.join(names)})"
    return manifest, check


def freeze_file(version_file: str | Path, slices: list[str] | None = None, *, parent: str | None = None,
                notes: str | None = None, catalogues: list[str] | None = None,
                surfaces: list[str] | None = None) -> Frozen:
    """Freeze the version in ``version_file`` (see the module's docstring); InputError on bad input, with
    nothing written. ``slices``: the slices its lines may belong to (default: those they name, in order);
    ``catalogues`` (requests) or ``surfaces`` (tasks): what to check it against (default: all of the set)."""
    path = Path(version_file)
    if path.suffix != ".jsonl" or path.stem.endswith(ADJUDICATIONS) or not path.is_file():
        raise InputError.one(str(path), "", "file-exists", "give a version file such as tasksets/support/v2.jsonl "
                             "(requests) or tasksets/support_tasks/t2.jsonl (tasks)")
    folder, version = path.parent, path.stem
    tasks = (folder / "surfaces").is_dir()
    model: type[FrozenVersion] = TaskSetManifest if tasks else VersionManifest
    target = folder / f"{version}.manifest.json"
    if parent is not None and (parent == version or not (folder / f"{parent}.manifest.json").is_file()):
        raise InputError.one(str(path), "", "parent-frozen",
                             f"parent {parent} is not a frozen version of {folder} (no {parent}.manifest.json)"
                             if parent != version else "a version cannot be its own parent")
    wrong = "--catalogue" if tasks and catalogues else "--surface" if surfaces and not tasks else None
    if wrong:
        raise InputError.one(str(path), "", "freeze-options", f"{wrong} does not apply: {version} is a version of "
                             + ("tasks (a set with surfaces/): name surfaces" if tasks else "requests: name catalogues"))
    declared = list(dict.fromkeys(slices)) if slices else _slices_in_order(path)
    build = _tasks if tasks else _selection
    manifest, check = build(folder, version, declared, parent, notes or "", surfaces if tasks else catalogues)
    if target.is_file():
        existing = read_json_model(target, model)
        asked = {"slices": declared if slices else existing.slices, "parent": parent if parent is not None
                 else existing.parent, "notes": notes if notes is not None else getattr(existing, "notes", "")}
        differs = [f"{k} {asked[k]!r} (frozen: {getattr(existing, k)!r})" for k in asked
                   if asked[k] != getattr(existing, k)]
        if existing.content_hash == manifest.content_hash and differs:
            raise InputError.one(str(target), "", "version-immutable",
                                 f"version {version} is frozen; a frozen manifest is never rewritten: {'; '.join(differs)}. "
                                 "Write a new version.")
        kept = freeze_manifest(target, model, version, manifest.content_hash, lambda actual: manifest)  # refuses a change
        return Frozen(kept, target, written=False, checked="nothing (a frozen version was checked when it was frozen; "
                      "`validate` checks it again)")
    checked = check()  # every check a run makes, against the manifest about to be written; raises InputError
    written = freeze_manifest(target, model, version, manifest.content_hash, lambda actual: manifest)
    return Frozen(written, target, written=written is manifest, checked=checked)
