"""The check before a run that the pinned MCP servers of its arms' surfaces still list what their catalogues
hold (tasks/surface/catalogue_drift.py says what counts as drift): each pinned server is started once, listed
and stopped (``check_pinned_servers``, the surface instrument's ``check_before_run``)."""

from __future__ import annotations

import json
import shutil
import weakref
from typing import Any, Mapping

from tasks.files.input_errors import InputError, Problem
from tasks.surface.catalogue_drift import DRIFT_RULE, Listing, catalogue_drift, drift_reason


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


def live_listing(backend: Any, name: str, fixtures: Mapping[str, Any], file: str) -> Listing | None:
    """What server ``name`` of an MCP backend lists when started in a scratch state folder reset to ``fixtures``
    (its tools and annotations), or None when it cannot start or list them; InputError (naming ``file``) when it
    lists a tool tooleval cannot offer."""
    from pydantic import ValidationError

    from schemas.catalogue import rule_of
    from tasks.files.owned_folders import owned_folder
    from tasks.mcp.connection import ServerConnection, ServerFailed
    from tasks.surface.mcp_backend import listed_tools, write_state
    from tasks.taskset.load_taskset import validation_message

    scratch = owned_folder("mcp-check")  # named after this process: a killed run's is removed by the next
    connection = ServerConnection(backend.spec.servers[name], base_dir=backend.base_dir, state_dir=scratch,
                                  label=name)
    try:
        write_state(scratch, backend.spec.make_dirs, fixtures)
        return listed_tools(connection.start())
    except ServerFailed:
        return None
    except ValidationError as error:
        raise InputError.one(file, f"mcp.servers.{name}", rule_of(error, "tool-name"), f"MCP server '{name}' lists "
                             f"a tool tooleval cannot offer: {validation_message(error)}") from None
    finally:
        connection.close()
        shutil.rmtree(scratch, ignore_errors=True)


def check_pinned_servers(prepared: Any, allow_provisional: bool = False) -> None:
    """Start each server of the arms' surfaces that is pinned to a catalogue (once per server), list its tools
    and stop it; InputError naming the surface file, the server, what changed and the import line, for every
    one that drifted. A server that cannot start is left to the run (its tasks say why)."""
    from tasks.surface.load_surface import surface_path

    problems: list[Problem] = []
    agreed = _agreed_for(prepared.experiment)
    arms_on: dict[str, list[str]] = {}
    for arm in prepared.experiment.arms:
        backend = arm.surface.backend
        if getattr(backend, "kind", None) != "mcp":
            continue
        for name, server in backend.spec.servers.items():
            if server.catalogue is not None:
                arms_on.setdefault(_server_key(backend, name), []).append(arm.name)
    checked: set[str] = set()
    for arm in prepared.experiment.arms:
        surface = arm.surface
        backend = surface.backend
        if getattr(backend, "kind", None) != "mcp":
            continue
        file = str(surface_path(surface.taskset_dir, surface.name))
        for name, server in backend.spec.servers.items():
            if server.catalogue is None:
                continue
            key = _server_key(backend, name)
            if key in agreed or key in checked:
                continue
            checked.add(key)
            version = prepared.versions[arm.version]
            tasks = version.tasks
            listed = live_listing(backend, name, version.fixtures(tasks[0]) if tasks else {}, file)
            if listed is None:
                continue  # not drift: the run's tasks record that the server could not start
            drift = catalogue_drift(backend.pinned[name], listed, backend.spec.marks)
            if drift:
                arms = ", ".join(arms_on[key])
                problems.append(Problem(file, f"mcp.servers.{name}", DRIFT_RULE,
                                        f"{drift_reason(name, server, drift, surface.taskset_dir)}; "
                                        f"arm(s) {arms} run on it. Nothing was run."))
            else:
                agreed.add(key)
    if problems:
        raise InputError(problems)
