"""Read ``surfaces/<name>.yaml``: its backend (a toolkit from the backend package, or MCP servers) seen
through its transform."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from schemas.catalogue import PARAMETERS_PASSED, Catalogue, ToolSpec, rule_of
from schemas.surface.surface_file import SurfaceFile
from tasks.files.content_hash import sha256_hex
from tasks.files.input_errors import InputError, Problem
from tasks.files.yaml_files import load_yaml
from tasks.taskset.load_taskset import validation_message
from tasks.surface.load_backend import backend_hash, load_toolkit
from tasks.surface.surface_session import DEFAULT_CALL_TIMEOUT_S, ToolkitBackend
from tasks.surface.toolkit import BackendTool
from tasks.surface.transform_tools import transform_problems, transform_tools


@dataclass(frozen=True)
class OfferedTool:
    """A tool as the model sees it (name, description, schema) and the backend tool it runs."""

    spec: ToolSpec
    backend: BackendTool


@dataclass(frozen=True)
class ResolvedSurface:
    """A surface ready to run: its backend (``ToolkitBackend`` or ``McpBackend``, each opening a session per
    task: tasks/surface/surface_session.py) and the tools offered, in the backend's order."""

    name: str
    description: str
    taskset_dir: Path
    backend: Any
    tools: tuple[OfferedTool, ...]
    surface_hash: str

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(tool.spec for tool in self.tools)

    @property
    def catalogue(self) -> Catalogue:
        return Catalogue(name=self.name, tools=self.specs)

    def offered(self, name: str) -> OfferedTool | None:
        return self._by_name.get(name)

    @cached_property
    def _by_name(self) -> dict[str, OfferedTool]:
        return {tool.spec.name: tool for tool in self.tools}

    @property
    def backend_tools(self) -> dict[str, BackendTool]:
        return self.backend.tools()

    @property
    def warnings(self) -> tuple[str, ...]:
        """What validate and the report say about how the surface's tools are counted (an MCP server without
        annotations: tasks/surface/mcp_backend.py's unannotated_warnings); empty for a toolkit."""
        return tuple(getattr(self.backend, "warnings", ()))

    @property
    def servers(self) -> tuple[str, ...]:
        """The MCP servers the surface's tools come from (none for a toolkit)."""
        return tuple(self.backend.spec.servers) if self.backend.kind == "mcp" else ()

    def __reduce__(self):
        """Pickled (a work unit sent to a Dask or Ray worker) as where it is read from: its toolkit class and MCP
        server instances belong to the process that loaded it, so the worker reads the surface again."""
        return (reloaded_surface, (self.taskset_dir, self.name, self.surface_hash))


_reloaded: dict[tuple[str, str, str], "ResolvedSurface"] = {}
_reload_lock = threading.Lock()


def reloaded_surface(taskset_dir: Path, name: str, surface_hash: str) -> "ResolvedSurface":
    """The surface a work unit was planned with, read again in this process (a Dask or Ray worker): once per
    process, so an MCP surface is listed once, not per unit; InputError when it changed since the run began."""
    key = (str(taskset_dir), name, surface_hash)
    with _reload_lock:
        surface = _reloaded.get(key)
        if surface is None:
            surface = load_surface(taskset_dir, name)
            if surface.surface_hash != surface_hash:
                raise InputError.one(str(surface_path(taskset_dir, name)), "", "surface-unchanged",
                                     "the surface changed after the run started: run again")
            _reloaded[key] = surface
        return surface


def surface_path(taskset_dir: Path, name: str) -> Path:
    return Path(taskset_dir) / "surfaces" / f"{name}.yaml"


def read_surface_file(path: Path) -> SurfaceFile:
    file = str(path)
    if not path.is_file():
        raise InputError.one(file, "", "file-exists", "surface file not found")
    data = load_yaml(path.read_bytes(), file)
    try:
        return SurfaceFile.model_validate(data)
    except ValidationError as error:
        raise InputError([Problem(file, ".".join(str(p) for p in e["loc"]), "schema", e["msg"])
                          for e in error.errors()]) from None


def load_surface(taskset_dir: Path, name: str) -> ResolvedSurface:
    """The surface named ``name`` in a task-set folder, or InputError naming the file and the rule."""
    taskset_dir = Path(taskset_dir).resolve()
    path = surface_path(taskset_dir, name)
    spec = read_surface_file(path)
    if spec.name != name:
        raise InputError.one(str(path), "name", "surface-name", f"name '{spec.name}' differs from file stem '{name}'")
    if spec.toolkit is not None:
        toolkit = load_toolkit(taskset_dir, spec.toolkit, str(path))
        backend: Any = ToolkitBackend(toolkit, spec.toolkit, spec.call_timeout_s or DEFAULT_CALL_TIMEOUT_S)
        exclude = {"description", "mcp"} | ({"call_timeout_s"} if spec.call_timeout_s is None else set())
        identity: dict[str, Any] = {"file": spec.model_dump(mode="json", exclude=exclude),  # unset: hash as before
                                    "backend": backend_hash(taskset_dir)}
    else:
        from tasks.surface.load_mcp_surface import mcp_backend

        backend, identity = mcp_backend(taskset_dir, spec, str(path))
    tools_by_name = backend.tools()
    from tasks.taskset.catalogue_memo import parameters_key, parameters_passed, remember_parameters

    # argument schemas that passed their check before (the same schemas, the same rules) are not checked again
    key = parameters_key([t.parameters for t in tools_by_name.values()])
    context = {PARAMETERS_PASSED: True} if parameters_passed(key) else None
    underlying = []
    refused: list[Problem] = []
    for t in tools_by_name.values():
        try:
            underlying.append(ToolSpec.model_validate(
                {"name": t.name, "description": t.description, "parameters": t.parameters}, context=context))
        except ValidationError as error:
            refused.append(Problem(str(path), f"tool {t.name}", rule_of(error, "tool-name"), validation_message(error)))
    if refused:
        raise InputError(refused)
    if context is None:
        remember_parameters(key)
    problems = transform_problems([t.name for t in underlying], spec.transform)
    if problems:
        raise InputError([Problem(str(path), "transform", rule, message) for rule, message in problems])
    tools = tuple(OfferedTool(offered, tools_by_name[original])
                  for offered, original in transform_tools(underlying, spec.transform))
    digest = sha256_hex(json.dumps({
        **identity,
        "offered": [[t.spec.model_dump(), t.backend.name, t.backend.marks.model_dump()] for t in tools],
    }, sort_keys=True))
    if backend.kind == "mcp":
        backend = backend.keyed(digest)
    return ResolvedSurface(name=name, description=spec.description, taskset_dir=taskset_dir, backend=backend,
                           tools=tools, surface_hash=digest)
