"""A catalogue's tool names, its checks remembered by content, for ``tooleval validate`` of a remembered version.

Loading a catalogue checks every tool's argument schema against its JSON Schema metaschema (jsonschema:
its import and a check per tool): most of a remembered ``validate``'s CPU. The checks are a pure
function of the catalogue files' bytes (the file and the chain it ``extends``), the rules (the catalogue
models' and the loader's source) and the jsonschema version, so a chain that passed is kept, like a label
check pass (``check_cache``: the same cache folder, nothing in it needed), under a hash of those. A chain
that fails is never kept: its problems are found and reported, with file and rule, every time. A file that
cannot even be followed as JSON is simply loaded (and refused) the slow way.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from tasks.files.content_hash import sha256_hex
from tasks.taskset.check_cache import recall, remember

RULES = (Path(__file__).resolve().parents[2] / "schemas" / "catalogue.py",
         Path(__file__).resolve().parents[2] / "schemas" / "mcp.py",
         Path(__file__).resolve().parent / "load_taskset.py",
         Path(__file__).resolve())


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
    if key is not None and (passed := recall(key)) is not None and isinstance(passed.get("tool_names"), list):
        return passed["tool_names"]
    from tasks.taskset.load_taskset import load_catalogue

    names = list(load_catalogue(taskset_dir, name).label_names)
    if key is not None:
        remember(key, {"tool_names": names})
    return names
