"""A server pinned to an imported catalogue, checked against what it lists now (drift).

Drift is what matters to an arm: a tool added or removed, an input schema changed, or annotations that now
count differently (``marks_from_annotations`` with the surface's ``marks:`` over them); descriptions and order
are not compared (the arm offers the catalogue's). It is checked before the run (``check_pinned_servers``,
the instrument's ``check_before_run``: each pinned server started once, listed and stopped; drift is bad input
naming the ``tooleval import mcp`` line that records the new version) and each time an instance
starts during it (``McpInstance``: the task stops with ``surface_error``, its detail containing
``DRIFT_WORDS``, and its arm is NOT JUDGED). Validate starts no server: it names the pinned ones
(``pinned_note``)."""

from __future__ import annotations

import json
import re
import shlex
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from schemas.mcp import BASE_DIR, McpAnnotations
from schemas.surface.surface_file import SurfaceServer, ToolMarkOverride
from tasks.files.input_errors import InputError, Problem
from tasks.mcp.tool_listing import Listing
from tasks.surface.tool_marks import marks_from_annotations

DRIFT_WORDS = "lists tools that differ from catalogue"
"""How a drift reason begins (after the server's name), in an InputError and in a task run's detail."""
DRIFT_RULE = "server-matches-catalogue"


@dataclass(frozen=True)
class Drift:
    """What differs between a pinned catalogue and the server's listing, as it matters to an arm."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    schemas: tuple[str, ...] = ()
    """Tools in both whose input schema changed."""
    marks: tuple[str, ...] = ()
    """Tools in both whose annotations now count differently (writes, irreversible, upstream reads)."""

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.schemas or self.marks)

    def words(self) -> str:
        """'removed: git_init; input schema changed: git_log' (the kinds that apply)."""
        kinds = (("added", self.added), ("removed", self.removed), ("input schema changed", self.schemas),
                 ("annotations changed how it is counted", self.marks))
        return "; ".join(f"{kind}: {', '.join(names)}" for kind, names in kinds if names)


def catalogue_drift(pinned: Listing, listed: Listing, overrides: Mapping[str, ToolMarkOverride]) -> Drift:
    """How the server's listing differs from the catalogue it is pinned to (empty: not at all)."""
    (old_tools, old_given), (new_tools, new_given) = pinned, listed
    old, new = {t.name: t for t in old_tools}, {t.name: t for t in new_tools}
    both = [name for name in old if name in new]

    def counted(given: Mapping[str, McpAnnotations], name: str) -> Any:
        return marks_from_annotations(given.get(name), overrides.get(name))

    return Drift(added=tuple(n for n in new if n not in old), removed=tuple(n for n in old if n not in new),
                 schemas=tuple(n for n in both if old[n].parameters != new[n].parameters),
                 marks=tuple(n for n in both if counted(old_given, n) != counted(new_given, n)))


def import_line(taskset_dir: Path, server: SurfaceServer) -> str:
    """The ``tooleval import mcp`` command that records what ``server`` lists now as the next version of the
    catalogue it is pinned to (the surface's command, args, env and cwd; ``{taskset_dir}`` filled in; env
    values as the surface file writes them, so a secret stays a ``$NAME``)."""
    base = re.sub(r"-v\d+$", "", server.catalogue or "")
    parts = ["tooleval", "import", "mcp", base, "--taskset", str(taskset_dir)]
    if server.url is not None:
        return shlex.join([*parts, "--url", server.url])

    def filled(text: str) -> str:
        return text.replace(BASE_DIR, str(taskset_dir))

    cwd = filled(server.cwd) if server.cwd else str(taskset_dir)
    parts += ["--cwd", cwd if Path(cwd).is_absolute() or "{" in cwd else str(Path(taskset_dir) / cwd)]
    for key, value in server.env.items():
        parts += ["--env", f"{key}={filled(value)}"]
    return shlex.join([*parts, "--", filled(server.command or ""), *(filled(a) for a in server.args)])


def drift_reason(name: str, server: SurfaceServer, drift: Drift, taskset_dir: Path) -> str:
    """The reason a drifted server is refused (before the run) or a task is not carried out (during it)."""
    return (f"MCP server '{name}' ({server.describe()}) {DRIFT_WORDS} {server.catalogue}: {drift.words()}. "
            f"Record what it lists now as a new version with `{import_line(taskset_dir, server)}` and pin the "
            "surface to it (or run the server the catalogue was imported from)")


def pinned_note(surfaces: Iterable[Any]) -> str | None:
    """What validate says of pinned servers: which ones the run checks against their live ``tools/list``."""
    pinned = sorted({f"{surface.name}/{name} ({server.catalogue})" for surface in surfaces
                     if getattr(surface.backend, "kind", None) == "mcp"
                     for name, server in surface.backend.spec.servers.items() if server.catalogue is not None})
    if not pinned:
        return None
    return (f"pinned MCP servers {', '.join(pinned)}: checked against their catalogue from the live server's "
            "tools/list when a run starts (before its first task), not here: validate starts no server")


_agreed: dict[int, tuple[Any, set[str]]] = {}
"""Per resolved experiment (its id, with a weak reference to tell a new object under a reused id), the servers
(``_server_key``) found to agree with their catalogue: the evaluate flow repeats the check the CLI made on the
same prepared run in the same process, and does not start a server again for it; another run checks again."""


def _agreed_for(experiment: Any) -> set[str]:
    """The servers found to agree for this experiment object (a new, empty set for an object not seen)."""
    entry = _agreed.get(id(experiment))
    if entry is not None and entry[0]() is experiment:
        return entry[1]
    for key in [key for key, (ref, _) in _agreed.items() if ref() is None]:
        del _agreed[key]
    try:
        entry = (weakref.ref(experiment), set())
    except TypeError:  # an object without weak references: no memory, every check is made
        return set()
    _agreed[id(experiment)] = entry
    return entry[1]


def _server_key(backend: Any, name: str) -> str:
    """A pinned server as the check sees it: how it is started, its catalogue and the marks over its tools (two
    surfaces that differ only in their transform share it, and it is started once for both)."""
    server = backend.spec.servers[name]
    listed = {tool.name for tool in backend.pinned[name][0]}
    marks = {tool: mark.model_dump(mode="json") for tool, mark in backend.spec.marks.items() if tool in listed}
    return json.dumps([str(backend.base_dir), server.model_dump(mode="json"), marks], sort_keys=True)


def check_pinned_servers(prepared: Any, allow_provisional: bool = False) -> None:
    """Start each server of the arms' surfaces that is pinned to a catalogue (once per server), list its tools
    and stop it; InputError naming the surface file, the server, what changed and the import line, for every
    one that drifted. A server that cannot start is left to the run (its tasks say why)."""
    from tasks.mcp.connection import ServerFailed
    from tasks.surface.load_mcp_surface import list_server
    from tasks.surface.load_surface import surface_path

    problems: list[Problem] = []
    agreed = _agreed_for(prepared.experiment)
    pinned: dict[str, tuple[Any, str, list[str]]] = {}
    """Each pinned server (``_server_key``) -> the first arm on it, its name there, and every arm on it."""
    for arm in prepared.experiment.arms:
        backend = arm.surface.backend
        if getattr(backend, "kind", None) != "mcp":
            continue
        for name, server in backend.spec.servers.items():
            if server.catalogue is not None:
                pinned.setdefault(_server_key(backend, name), (arm, name, []))[2].append(arm.name)
    for key, (arm, name, arms) in pinned.items():
        if key in agreed:
            continue
        surface, backend = arm.surface, arm.surface.backend
        server, version = backend.spec.servers[name], prepared.versions[arm.version]
        file = str(surface_path(surface.taskset_dir, surface.name))
        try:
            listed = list_server(backend.base_dir, name, server, backend.spec.make_dirs, file,
                                 version.fixtures(version.tasks[0]) if version.tasks else {})
        except ServerFailed:
            continue  # not drift: the run's tasks record that the server could not start
        drift = catalogue_drift(backend.pinned[name], listed, backend.spec.marks)
        if drift:
            problems.append(Problem(file, f"mcp.servers.{name}", DRIFT_RULE,
                                    f"{drift_reason(name, server, drift, surface.taskset_dir)}; "
                                    f"arm(s) {', '.join(arms)} run on it. Nothing was run."))
        else:
            agreed.add(key)
    if problems:
        raise InputError(problems)
