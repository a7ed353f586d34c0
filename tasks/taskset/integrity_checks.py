"""The rules of a task-set version and its production weights that need no table and no Great Expectations,
checked where the version is loaded, before any slower check and before Prefect starts:

- ids-unique: no request id is used twice;
- manifest-hash: the version's files hash to the manifest's content_hash;
- weights-non-negative, weights-in-catalogue, weights-sum-to-one: the production weights.

The label rules over the request table (tasks/taskset/label_checks.py) run after these pass.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Collection

from schemas.taskset import ProductionWeights
from tasks.files.input_errors import Problem
from tasks.taskset.load_taskset import TaskSetVersion, version_paths

WEIGHT_SUM_TOLERANCE = 1e-6
VERSION_RULES = 2
"""ids-unique and manifest-hash."""
WEIGHT_RULES = 3


def version_problems(version: TaskSetVersion) -> list[Problem]:
    """Each request line whose id another line uses too, and a manifest whose hash the files no longer have."""
    file = str(version.requests_path)
    ids = version.column("id")
    problems = []
    if len(set(ids)) < len(ids):
        twice = {id_ for id_, count in Counter(ids).items() if count > 1}
        problems += [Problem(file, f"line {line} (id {id_})", "ids-unique", f"id used more than once: {id_}")
                     for line, id_ in zip(version.column("line"), ids) if id_ in twice]
    if version.manifest.content_hash != version.actual_hash:
        problems.append(Problem(
            str(version_paths(version.directory, version.version)["manifest"]), "", "manifest-hash",
            f"the version's files hash to {version.actual_hash[:12]}, the manifest says "
            f"{version.manifest.content_hash[:12]}: " + edit_explanation(version.requests_path)))
    return problems


def weight_problems(weights: ProductionWeights, path: Path | str | None, catalogue_tools: Collection[str]) -> list[Problem]:
    """Negative shares, tools no catalogue in use offers (when a catalogue is in use), shares not summing to 1."""
    file = str(path or "weights")
    problems = [Problem(file, f"tool {tool}", "weights-non-negative", f"negative share: {share}")
                for tool, share in weights.weights.items() if share < 0]
    if catalogue_tools:
        problems += [Problem(file, f"tool {tool}", "weights-in-catalogue", "not a tool of the catalogues in use")
                     for tool in weights.weights if tool not in catalogue_tools]
    total = sum(weights.weights.values())
    if abs(total - 1) > WEIGHT_SUM_TOLERANCE:
        problems.append(Problem(file, "", "weights-sum-to-one", f"shares must sum to 1 (observed {total})"))
    return problems


def edit_explanation(requests_path: Path) -> str:
    """Why a frozen version's files no longer hash to its manifest: an edit, or line endings a checkout
    converted (git's core.autocrlf turns LF into CRLF on Windows)."""
    try:
        converted = b"\r\n" in requests_path.read_bytes()
    except OSError:
        converted = False
    if converted:
        return ("the file has Windows line endings (CRLF), so a checkout converted it (git core.autocrlf); "
                "versions are frozen with LF: the repository's .gitattributes keeps task-set files LF, run "
                "`git add --renormalize . && git checkout -- tasksets` or set core.autocrlf=false and check out again")
    return "the version was edited after it was frozen"
