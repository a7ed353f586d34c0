"""A server pinned to an imported catalogue, checked against what it lists now (drift).

A surface whose server names ``catalogue:`` offers the catalogue's tools and counts calls with the marks of
the catalogue's annotations, without starting the server. What the server lists may have moved since the
import (a new release of the package). ``catalogue_drift`` compares the two as they matter to an arm:

- tool names: a tool added or removed (a call of a removed tool fails, an added one is never offered);
- input schemas: the server validates arguments against its own schema, not the catalogue's;
- annotations as they are counted: the marks ``marks_from_annotations`` derives (with the surface file's
  ``marks:`` over them), so an annotation that moves no counter (a title, ``idempotentHint``) is no drift.

Descriptions and the order of the list are not compared: the arm offers the catalogue's text, in its own
order, and the server never sees either.

Where it is checked:

- before the run (tasks/surface/drift_check.py, the surface instrument's ``check_before_run``): each pinned server
  of the arms' surfaces is started once, listed and stopped, before the first task, in a scratch state folder
  reset to the fixtures of the first task it will serve (a server may need them to start: mcp-server-git
  refuses a folder that is not a repository); its setup calls are not made (listing needs none); drift
  is bad input (exit 2, nothing landed) naming the surface file, the server, what changed and the
  ``tooleval import mcp`` command that records the new version. A server that cannot start there is left to
  the run, whose tasks record why (``surface_error``), as before;
- during the run, each time an instance of the server starts (``McpInstance``): drift found then (the server
  changed mid-run) stops that task with ``surface_error`` and a detail beginning ``DRIFT_WORDS``; such a
  task was not carried out, and its arm is NOT JUDGED, with the detail as the reason, in every report format.

``tooleval validate`` and ``tooleval tasks validate`` do not start pinned servers (a start takes seconds):
they say which servers the run checks live (``pinned_note``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from schemas.catalogue import ToolSpec
from schemas.mcp import BASE_DIR, McpAnnotations
from schemas.surface.surface_file import SurfaceServer, ToolMarkOverride
from tasks.surface.tool_marks import marks_from_annotations

Listing = tuple[list[ToolSpec], dict[str, McpAnnotations]]

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
