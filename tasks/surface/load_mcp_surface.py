"""Resolve an MCP surface: each server's tools, from the catalogue it is pinned to (without starting it) or
from the server itself (started once in a scratch state folder, listed, stopped); the backend tools with
their marks; the surface's identity for its hash."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Mapping

from pydantic import ValidationError

from schemas.catalogue import CatalogueFile, rule_of
from schemas.surface.surface_file import ResetCalls, SurfaceFile, SurfaceServer
from tasks.files.input_errors import InputError
from tasks.files.owned_folders import owned_folder
from tasks.mcp.connection import ServerConnection, ServerFailed
from tasks.mcp.tool_listing import Listing
from tasks.surface.mcp_backend import McpBackend, backend_tools, listed_tools, unannotated_warnings, write_state
from tasks.taskset.load_taskset import read_json_model, validation_message

def pinned_tools(taskset_dir: Path, server: SurfaceServer, file: str) -> Listing:
    """The tools and annotations of the catalogue a server is pinned to."""
    path = Path(taskset_dir) / "catalogues" / f"{server.catalogue}.json"
    if not path.is_file():
        raise InputError.one(file, "mcp.servers", "catalogue-exists", f"catalogue {server.catalogue}: {path} not found "
                             "(import it with `tooleval import mcp`)")
    catalogue = read_json_model(path, CatalogueFile)
    return list(catalogue.tools), dict(catalogue.annotations or {})


def list_server(taskset_dir: Path, name: str, server: SurfaceServer, make_dirs: tuple[str, ...], file: str,
                fixtures: Mapping[str, Any] | None = None) -> Listing:
    """What the server lists, started once in a scratch state folder reset to ``fixtures``; InputError naming
    ``file`` when it lists a tool tooleval cannot offer, ServerFailed when it cannot start or list."""
    scratch = owned_folder("mcp-list")  # named after this process: a killed run's is removed by the next
    connection = ServerConnection(server, base_dir=Path(taskset_dir), state_dir=scratch)
    try:
        write_state(scratch, make_dirs, fixtures or {})
        return listed_tools(connection.start())
    except ValidationError as error:
        raise InputError.one(file, f"mcp.servers.{name}", rule_of(error, "tool-name"),
                             f"MCP server '{name}' lists a tool tooleval cannot offer: {validation_message(error)}") from None
    finally:
        connection.close()
        shutil.rmtree(scratch, ignore_errors=True)


def served_tools(taskset_dir: Path, name: str, server: SurfaceServer, make_dirs: tuple[str, ...], file: str) -> Listing:
    """What the server lists (``list_server``); InputError naming it when it fails."""
    try:
        return list_server(taskset_dir, name, server, make_dirs, file)
    except ServerFailed as failure:
        raise InputError.one(file, f"mcp.servers.{name}", "server-starts",
                             f"MCP server '{name}' ({server.describe()}) {failure}") from None


def mcp_backend(taskset_dir: Path, spec: SurfaceFile, file: str) -> tuple[McpBackend, dict[str, Any]]:
    """(the backend, unkeyed, and the surface's identity: its file and each server's tools)."""
    assert spec.mcp is not None
    listed: dict[str, Listing] = {}
    pinned: dict[str, Listing] = {}
    for name, server in spec.mcp.servers.items():
        if server.catalogue is not None:
            listed[name] = pinned[name] = pinned_tools(taskset_dir, server, file)
        else:
            listed[name] = served_tools(taskset_dir, name, server, spec.mcp.make_dirs, file)
    owners: dict[str, str] = {}
    for name, (specs, _) in listed.items():
        for tool in specs:
            if tool.name in owners:
                raise InputError.one(file, "mcp.servers", "tool-names-unique",
                                     f"'{tool.name}' is a tool of both {owners[tool.name]} and {name}")
            owners[tool.name] = name
    unknown = sorted(set(spec.mcp.marks) - set(owners))
    if unknown:
        raise InputError.one(file, "mcp.marks", "marks-tools", f"marks for tools no server lists: {', '.join(unknown)}")
    if isinstance(spec.mcp.reset, ResetCalls):
        unknown = sorted({tool for tool in spec.mcp.reset.tools if tool not in owners})
        if unknown:
            raise InputError.one(file, "mcp.reset", "reset-tools",
                                 f"reset calls of tools no server lists: {', '.join(unknown)}")
    tools = backend_tools(listed, spec.mcp.marks)
    identity = {"file": _file_identity(spec),
                "tools": {name: [[t.model_dump(mode="json"), a[t.name].model_dump(mode="json") if t.name in a else None]
                                 for t in specs] for name, (specs, a) in listed.items()}}
    backend = McpBackend(spec=spec.mcp, base_dir=Path(taskset_dir), tools_by_name=tuple(tools.items()),
                         pinned=pinned, key="", warnings=unannotated_warnings(listed, spec.mcp.marks))
    return backend, identity


def _file_identity(spec: SurfaceFile) -> dict[str, Any]:
    """The surface file as hashed; ``error_text`` and ``read_only`` left out where unset, so a surface that
    declares neither hashes as it did before they existed."""
    dumped = spec.model_dump(mode="json", exclude={"description", "toolkit", "call_timeout_s"})
    for server in dumped["mcp"]["servers"].values():
        if server.get("error_text") is None:
            server.pop("error_text", None)
    for marks in dumped["mcp"]["marks"].values():
        for key in ("read_only", "error_text"):
            if marks.get(key) is None:
                marks.pop(key, None)
    return dumped
