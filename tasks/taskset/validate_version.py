"""`tooleval validate`: the label checks on one version file, without an experiment. A version whose very
content passed before is answered from the label-check cache (tasks/taskset/check_cache.py) without reading
its requests into a table or importing the checks, and its catalogues' tool names come from a remembered pass
of the same bytes (tasks/taskset/catalogue_memo.py) without checking every tool schema again."""

from __future__ import annotations

from pathlib import Path

from tasks.files.input_errors import InputError
from tasks.taskset.catalogue_memo import catalogue_tool_names
from tasks.taskset.check_cache import content_check_key, recall_report
from tasks.taskset.load_taskset import content_hash, load_catalogue, load_manifest, load_version, load_weights


def validate_version_file(path: Path, catalogues: list[str] | None = None, weights_window: str | None = None) -> str:
    """Check ``<taskset>/<version>.jsonl``; returns a one-line summary or raises InputError."""
    path = Path(path)
    if path.suffix != ".jsonl" or not path.is_file():
        raise InputError.one(str(path), "", "file-exists", "give a task-set version file such as tasksets/x/v1.jsonl")
    taskset_dir, version = path.parent, path.stem
    names = catalogues if catalogues is not None else sorted(p.stem for p in (taskset_dir / "catalogues").glob("*.json"))
    tool_names = [tool for name in names for tool in catalogue_tool_names(taskset_dir, name)]
    weights = load_weights(taskset_dir, weights_window) if weights_window else None
    weights_path = taskset_dir / "weights" / f"{weights_window}.json" if weights_window else None
    key = content_check_key(taskset_dir, load_manifest(taskset_dir, version), content_hash(taskset_dir, version),
                            tool_names, weights)
    report = recall_report(key)
    if report is None:
        from tasks.taskset.label_checks import check_labels

        catalogues = [load_catalogue(taskset_dir, name) for name in names]
        report = check_labels(load_version(taskset_dir, version), catalogues, weights, weights_path)
    return (f"OK {path}: {report.n_requests} requests, {report.n_expectations} expectations passed"
            + (f", {report.n_weights} weights" if weights else "")
            + f"; catalogues: {', '.join(names) or 'per-request tools only'}"
            + (" (this content passed before: remembered, Great Expectations not run again)" if report.cached else ""))
