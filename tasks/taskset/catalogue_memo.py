"""A catalogue's checks remembered by content: its tool names for ``tooleval validate`` of a remembered
version, and the catalogue itself loaded without checking its argument schemas again (a run's arms,
``tooleval validate EXPERIMENT``).

Loading a catalogue checks every tool's argument schema against its JSON Schema metaschema. The checks are
a pure function of the catalogue files' bytes (the file and the chain it ``extends``), the rules (the catalogue
models' and the loader's source) and the jsonschema version, so a chain that passed is kept, like a label
check pass (``check_cache``), under a hash of those, in the cache's ``catalogue-checks`` folder (nothing in
it needed). A chain that fails is never kept: its problems are found and reported, with file and rule, every
time. A file that cannot even be followed as JSON is simply loaded (and refused) the slow way.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from tasks.files.cache_folder import cache_folder
from tasks.files.content_hash import sha256_hex
from tasks.taskset.check_cache import recall, remember

if TYPE_CHECKING:
    from schemas.catalogue import Catalogue

RULES = (Path(__file__).resolve().parents[2] / "schemas" / "catalogue.py",
         Path(__file__).resolve().parents[2] / "schemas" / "mcp.py",
         Path(__file__).resolve().parent / "load_taskset.py",
         Path(__file__).resolve())


def memo_dir() -> Path:
    """Where catalogue passes are kept: beside the label checks' passes, not among them."""
    return cache_folder("catalogue-checks")


@lru_cache(maxsize=1)
def rules_parts() -> tuple[tuple[str, str], ...] | None:
    """The rules' sources and the jsonschema version, hashed once per process (every catalogue's key holds
    them); None without jsonschema."""
    try:
        version = metadata.version("jsonschema")
    except metadata.PackageNotFoundError:
        return None
    return (*((path.name, sha256_hex(path.read_bytes())) for path in RULES), ("jsonschema", version))


def chain_key(taskset_dir: Path, name: str) -> str | None:
    """The hash of the rules and of every file of catalogue ``name``'s ``extends`` chain; None when the chain
    cannot be followed as JSON (a missing file, bad JSON, a loop): the full load reports why."""
    rules = rules_parts()
    if rules is None:
        return None
    parts: list[list[str]] = [list(part) for part in rules]
    seen: set[str] = set()
    current: object = name
    while current is not None:
        if not isinstance(current, str) or current in seen:
            return None
        seen.add(current)
        try:
            data = (taskset_dir / "catalogues" / f"{current}.json").read_bytes()
            parsed = json.loads(data)
        except (OSError, ValueError):
            return None
        if not isinstance(parsed, dict):
            return None
        parts.append([current, sha256_hex(data)])
        current = parsed.get("extends")
    return sha256_hex(json.dumps(["catalogue-checks", parts]))  # each part hashed apart: no boundary is ambiguous


def catalogue_tool_names(taskset_dir: Path, name: str) -> list[str]:
    """The names labels use for the tools of catalogue ``name`` (``Catalogue.label_names``: its tool names,
    inherited first, or the labels it maps to other names), from a remembered pass of the same bytes,
    else from the full load (``load_catalogue``: InputError naming the file and rule), whose pass is then kept."""
    key = chain_key(taskset_dir, name)
    passed = recall(key, memo_dir()) if key is not None else None
    if passed is not None and isinstance(passed.get("tool_names"), list):
        return passed["tool_names"]
    return list(_load_and_remember(taskset_dir, name, key).label_names)


def load_checked_catalogue(taskset_dir: Path, name: str) -> Catalogue:
    """Catalogue ``name`` resolved (``load_catalogue``: every file validated, names, ``extends`` and duplicate
    tools checked), its tools' argument schemas checked against their metaschema unless a pass of the same
    bytes under the same rules is remembered; a pass is then kept."""
    from tasks.taskset.load_taskset import load_catalogue

    key = chain_key(taskset_dir, name)
    if key is not None and recall(key, memo_dir()) is not None:
        return load_catalogue(taskset_dir, name, parameters_passed=True)
    return _load_and_remember(taskset_dir, name, key)


def parameters_key(parameters: list[dict]) -> str | None:
    """The hash of the rules and of these argument schemas (a surface's tools, made by its backend's code);
    None without jsonschema."""
    rules = rules_parts()
    if rules is None:
        return None
    texts = sorted(json.dumps(p, sort_keys=True) for p in parameters)
    return sha256_hex(json.dumps(["parameters-checks", [list(part) for part in rules], texts]))


def parameters_passed(key: str | None) -> bool:
    """These schemas passed the argument-schema check under these rules before (``remember_parameters``)."""
    return key is not None and recall(key, memo_dir()) is not None


def remember_parameters(key: str | None) -> None:
    """Keep a pass of the schemas ``key`` names (all of them passed: a failure is never kept)."""
    if key is not None:
        remember(key, {"parameters": True}, memo_dir())


def _load_and_remember(taskset_dir: Path, name: str, key: str | None) -> Catalogue:
    from tasks.taskset.load_taskset import load_catalogue

    catalogue = load_catalogue(taskset_dir, name)
    if key is not None:
        remember(key, {"tool_names": list(catalogue.label_names)}, memo_dir())
    return catalogue
