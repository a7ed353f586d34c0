"""A surface served by MCP servers: their tools as backend tools, warm server instances, fresh state per task.

A tool's MCP annotations become its marks (``marks_from_annotations``: the specification's defaults where the
server said nothing, the surface file's ``marks:`` over them). A result with ``isError``, or whose text matches
the ``error_text`` the surface declares for the tool or its server, is an error call. An instance is one
process per server sharing a state folder, kept warm in a pool per surface and process; a task holds one at a
time, reset first as the surface's ``reset`` says (``files``, ``restart``, ``none``, or declared ``setup`` /
``teardown`` calls, with which this process runs the surface's tasks one at a time). docs/surface/mcp.md says
what each of these means for a task and its counters."""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from schemas.surface.surface_file import (
    ErrorText,
    McpSurface,
    ResetCall,
    ResetCalls,
    SurfaceServer,
    ToolMarkOverride,
)
from tasks.files.owned_folders import owned_folder
from tasks.mcp.connection import ServerConnection, ServerFailed
from tasks.mcp.tool_listing import Listing, annotations_of, tool_spec
from tasks.surface.surface_session import MAX_DETAIL, CallOutcome, CallTimedOut, SurfaceBroke
from tasks.surface.tool_marks import marks_from_annotations
from tasks.surface.toolkit import BackendTool

INVALID_PARAMS = -32602
"""JSON-RPC's invalid params: the server's own validation rejected the arguments (an invalid call)."""
FIXTURE_KEYS = ("files", "setup")


def backend_tools(listed: Mapping[str, Listing], overrides: Mapping[str, ToolMarkOverride]) -> dict[str, BackendTool]:
    """Every server's tools (server name -> (tools, annotations)) as backend tools, in server order."""
    tools: dict[str, BackendTool] = {}
    for server, (specs, given) in listed.items():
        for spec in specs:
            marks, reads = marks_from_annotations(given.get(spec.name), overrides.get(spec.name))
            tools[spec.name] = BackendTool(name=spec.name, description=spec.description, parameters=spec.parameters,
                                           marks=marks, server=server, reads_per_call=reads)
    return tools


def unannotated_warnings(listed: Mapping[str, Listing], overrides: Mapping[str, ToolMarkOverride]) -> tuple[str, ...]:
    """A warning per server that gives no annotation on any of its tools and none of whose tools the surface
    file marks: how its tools are counted (the defaults of ``marks_from_annotations``)."""
    warnings = []
    for server, (specs, given) in listed.items():
        names = [spec.name for spec in specs]
        if not names or any(name in given for name in names) or any(name in overrides for name in names):
            continue
        warnings.append(
            f"MCP server '{server}' gives no annotations on any of its {len(names)} tools and the surface marks "
            f"none of them: each is counted as MCP's defaults say (not read-only, destructive, open-world), so "
            f"every executed call of {', '.join(names)} that the server does not refuse counts as a write, an "
            "irreversible action and one upstream read (a refused call as neither). Mark its tools in the surface "
            "file (mcp.marks: {TOOL: {read_only: true}}) to count them as they are.")
    return tuple(warnings)


def listed_tools(connection: ServerConnection) -> Listing:
    """What a running server lists: its tools and the annotations it gave."""
    tools = connection.list_tools()
    annotations = {t.name: a for t in tools if (a := annotations_of(t)) is not None}
    return [tool_spec(t) for t in tools], annotations


# -- fresh state --------------------------------------------------------------------------------------------
def fixture_problems(fixtures: Mapping[str, Any]) -> list[str]:
    """Why a task's merged fixtures cannot be an MCP state (empty: they can)."""
    problems = [f"unknown fixture key '{key}': an MCP surface reads {', '.join(FIXTURE_KEYS)}"
                for key in fixtures if key not in FIXTURE_KEYS]
    files = fixtures.get("files", {})
    if not isinstance(files, dict):
        problems.append("'files' maps a path under the state folder to its content")
    else:
        problems += [f"file '{path}' is not a relative path inside the state folder"
                     for path in files if not _inside(path)]
    setup = fixtures.get("setup", [])
    if not isinstance(setup, list) or not all(isinstance(c, dict) and isinstance(c.get("tool"), str)
                                              and isinstance(c.get("args", {}), dict) for c in setup):
        problems.append("'setup' is a list of calls {\"tool\": NAME, \"args\": {...}}")
    return problems


def _inside(path: str) -> bool:
    return bool(path) and not path.startswith("/") and ".." not in Path(path).parts


def file_content(content: Any) -> str:
    """A fixture file's text: a string as is, a list as JSON Lines, anything else as JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in content)
    return json.dumps(content, ensure_ascii=False, indent=2)


def write_state(state_dir: Path, make_dirs: tuple[str, ...], fixtures: Mapping[str, Any]) -> None:
    """Empty the state folder, make the surface's folders and write the task's fixture files. The surface's
    folders are emptied, never removed: a running server may have one as its working directory."""
    keep = {(state_dir / folder).resolve() for folder in make_dirs}
    _empty(state_dir, keep)
    for folder in make_dirs:
        (state_dir / folder).mkdir(parents=True, exist_ok=True)
    for relative, content in (fixtures.get("files") or {}).items():
        path = state_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(file_content(content), encoding="utf-8")


def _empty(folder: Path, keep: set[Path]) -> None:
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            if child.resolve() in keep or any(k.is_relative_to(child.resolve()) for k in keep):
                _empty(child, keep)
                if child.resolve() not in keep and not any(child.iterdir()):
                    child.rmdir()
            else:
                shutil.rmtree(child)
        else:
            child.unlink()


# -- instances and their pool -------------------------------------------------------------------------------
class McpInstance:
    """One process per server of the surface, sharing one state folder."""

    def __init__(self, backend: "McpBackend"):
        self.backend = backend
        self.state_dir = owned_folder("mcp")  # named after this process: a killed run's is removed by the next
        self.connections: dict[str, ServerConnection] = {}

    def start(self) -> "McpInstance":
        """Start every server (SurfaceBroke names the one that failed); a server pinned to a catalogue must
        list exactly the catalogue's tools."""
        for name, server in self.backend.spec.servers.items():
            connection = ServerConnection(server, base_dir=self.backend.base_dir, state_dir=self.state_dir)
            try:
                self.connections[name] = connection.start()
                if server.catalogue is not None:
                    self._check_pinned(name, server, connection)
            except ServerFailed as failure:
                self.close()
                raise SurfaceBroke(f"MCP server '{name}' ({server.describe()}): {failure}") from None
        return self

    def _check_pinned(self, name: str, server: SurfaceServer, connection: ServerConnection) -> None:
        """SurfaceBroke when the server drifted from its catalogue (tasks/surface/catalogue_drift.py)."""
        from tasks.surface.catalogue_drift import catalogue_drift, drift_reason

        drift = catalogue_drift(self.backend.pinned[name], listed_tools(connection), self.backend.spec.marks)
        if drift:
            self.close()
            raise SurfaceBroke(drift_reason(name, server, drift, self.backend.base_dir))

    @property
    def alive(self) -> bool:
        servers = self.backend.spec.servers
        return len(self.connections) == len(servers) and all(c.alive for c in self.connections.values())

    def close(self) -> None:
        for connection in self.connections.values():
            connection.close()
        self.connections = {}
        shutil.rmtree(self.state_dir, ignore_errors=True)


@dataclass
class InstancePool:
    """Warm instances of one surface in this process; a task holds one at a time."""

    backend: "McpBackend"
    idle: list[McpInstance] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    starts: int = 0
    start_s: float = 0.0
    """Instances started and the seconds their start-up took (for the harness benchmark)."""
    teardown_pending: str | None = None
    """Why the declared teardown has to be made before the next task (it failed, or a task's server failed)."""
    serial: threading.Lock = field(default_factory=threading.Lock)
    """Held by a task of a surface with declared reset calls from its setup to its teardown: the server keeps
    one state for every caller, so this process runs that surface's tasks one at a time."""

    def acquire(self, fixtures: Mapping[str, Any]) -> McpInstance:
        spec = self.backend.spec
        with self.lock:
            instance = self.idle.pop() if self.idle and spec.reset != "restart" else None
        if instance is not None and spec.reset == "files":
            write_state(instance.state_dir, spec.make_dirs, fixtures)
        if instance is None:
            instance = McpInstance(self.backend)
            if spec.reset in ("files", "restart"):
                write_state(instance.state_dir, spec.make_dirs, fixtures)
            started = time.perf_counter()
            instance.start()
            with self.lock:
                self.starts += 1
                self.start_s += time.perf_counter() - started
        return instance

    def release(self, instance: McpInstance, broken: bool) -> None:
        if broken or not instance.alive or self.backend.spec.reset == "restart":
            instance.close()
            return
        with self.lock:
            self.idle.append(instance)

    def close(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for instance in idle:
            instance.close()


_pools: dict[str, InstancePool] = {}
_pools_lock = threading.Lock()


def pool_for(backend: "McpBackend") -> InstancePool:
    with _pools_lock:
        pool = _pools.get(backend.key)
        if pool is None:
            pool = _pools[backend.key] = InstancePool(backend)
        return pool


def close_pools() -> None:
    """Stop every warm server instance of this process (when a run's units are done)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()


# -- a task's session ---------------------------------------------------------------------------------------
class McpSession:
    """One task on one instance."""

    def __init__(self, backend: "McpBackend", pool: InstancePool, instance: McpInstance):
        self.backend, self.pool, self.instance = backend, pool, instance

    def call(self, tool: BackendTool, arguments: dict[str, Any]) -> CallOutcome:
        server = tool.server or ""
        connection = self.instance.connections[server]
        started = time.perf_counter()
        try:
            result = connection.call(tool.name, arguments, self.backend.spec.call_timeout_s)
        except ServerFailed as failure:
            if str(failure).startswith(f"hung: no answer to tools/call {tool.name} "):  # counted per tool
                raise CallTimedOut(f"MCP server '{server}' {failure}", wall=False) from None
            raise SurfaceBroke(f"MCP server '{server}' {failure}") from None
        except Exception as answered:  # an MCP error answer to this call (the server is fine)
            elapsed = (time.perf_counter() - started) * 1000
            message = f"MCP error {getattr(answered, 'code', '?')}: {answered}"[:MAX_DETAIL]
            if getattr(answered, "code", None) == INVALID_PARAMS:
                return CallOutcome(value=None, content=message, invalid=message, backend_ms=elapsed)
            return CallOutcome(value=None, content=message, refused=message, backend_ms=elapsed)
        elapsed = (time.perf_counter() - started) * 1000
        text = "\n".join(_block_text(block) for block in result.content)
        if result.is_error:
            if text.startswith(f"MCP error {INVALID_PARAMS}"):
                return CallOutcome(value=None, content=text, invalid=text[:MAX_DETAIL], backend_ms=elapsed)
            return CallOutcome(value=None, content=text, refused=text[:MAX_DETAIL] or "error", backend_ms=elapsed)
        matcher = self.backend.error_text(tool)
        if matcher is not None and matcher.matches(text):  # refused, said in text without isError
            return CallOutcome(value=None, content=text, refused=text[:MAX_DETAIL] or "error", backend_ms=elapsed)
        value = result.structured_content if result.structured_content is not None else _parsed(text)
        return CallOutcome(value=value, content=text, upstream_reads=tool.reads_per_call, backend_ms=elapsed)

    def end_state(self) -> Any:
        return None

    def make_calls(self, calls: Sequence[ResetCall], what: str) -> None:
        """Calls made for a task's state, not by its agent (``what``: the task's 'setup', or the surface's
        'reset setup' / 'reset teardown'); SurfaceBroke naming the one that did not succeed."""
        tools = self.backend.tools()
        for call in calls:
            if call.tool not in tools:
                raise SurfaceBroke(f"{what} call of unknown tool '{call.tool}'")
            outcome = self.call(tools[call.tool], dict(call.arguments))
            if outcome.refused or outcome.invalid:
                raise SurfaceBroke(f"{what} call {call.tool} failed: {outcome.refused or outcome.invalid}")

    def close(self, broken: bool) -> str | None:
        """Return the instance; with declared reset calls, make the teardown first. What went wrong with the
        teardown (for the task's detail), or None."""
        reset = self.backend.spec.reset
        if not isinstance(reset, ResetCalls):
            self.pool.release(self.instance, broken)
            return None
        note = None
        try:
            if reset.teardown and (broken or not self.instance.alive):
                self.pool.teardown_pending = "the server failed during the previous task, before its teardown"
            elif reset.teardown:
                try:
                    self.make_calls(reset.teardown, "reset teardown")
                    self.pool.teardown_pending = None
                except SurfaceBroke as failed:
                    note = self.pool.teardown_pending = str(failed)
                    broken = True
            self.pool.release(self.instance, broken)
        finally:
            self.pool.serial.release()
        return note


def _block_text(block: Any) -> str:
    text = getattr(block, "text", None)
    if isinstance(text, str):
        return text
    return f"[{getattr(block, 'type', 'content')}: {getattr(block, 'mime_type', '') or ''}]"


def _parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return text


@dataclass(frozen=True)
class McpBackend:
    """The servers of one surface, their tools, and where their instances come from."""

    spec: McpSurface
    base_dir: Path
    """The task-set folder: servers start there (commands and paths relative to it)."""
    tools_by_name: tuple[tuple[str, BackendTool], ...]
    pinned: dict[str, Listing]
    """Servers pinned to a catalogue -> the catalogue's tools and annotations."""
    key: str
    """The surface's hash: one pool per surface."""

    kind = "mcp"

    warnings: tuple[str, ...] = ()
    """What the report and validate say about how the surface's tools are counted (unannotated_warnings)."""

    def tools(self) -> dict[str, BackendTool]:
        return dict(self.tools_by_name)

    def error_text(self, tool: BackendTool) -> ErrorText | None:
        """How a refused call of this tool reads when the server does not set isError (the tool's marks, else
        its server's), or None."""
        override = self.spec.marks.get(tool.name)
        if override is not None and override.error_text is not None:
            return override.error_text
        server = self.spec.servers.get(tool.server or "")
        return server.error_text if server is not None else None

    def keyed(self, key: str) -> "McpBackend":
        """The same backend, its pool keyed by the surface's hash."""
        return dataclasses.replace(self, key=key)

    def open(self, fixtures: Mapping[str, Any]) -> McpSession:
        """An instance reset to the task's fixtures, its setup calls made; SurfaceBroke when it fails."""
        pool = pool_for(self)
        declared = self.spec.reset if isinstance(self.spec.reset, ResetCalls) else None
        if declared:
            pool.serial.acquire()  # released when the task's session closes (or here, when it cannot open)
        instance = None
        try:
            instance = pool.acquire(fixtures)
            session = McpSession(self, pool, instance)
            if declared:
                pending = pool.teardown_pending
                if pending is not None and declared.teardown:
                    try:
                        session.make_calls(declared.teardown, "reset teardown")
                    except SurfaceBroke as again:
                        raise SurfaceBroke(f"the teardown after an earlier task is still pending ({pending}) and "
                                           f"failed again before this task: {again}") from None
                    pool.teardown_pending = None
                session.make_calls(declared.setup, "reset setup")
            session.make_calls([ResetCall(tool=c["tool"], arguments=c.get("args") or {})
                                for c in fixtures.get("setup") or []], "setup")
        except BaseException as broke:  # SurfaceBroke, or anything unforeseen: never keep the instance or the turn
            if instance is not None:
                if declared and declared.teardown and pool.teardown_pending is None:
                    pool.teardown_pending = f"a task's setup did not complete: {broke}"
                pool.release(instance, broken=True)
            if declared:
                pool.serial.release()
            raise
        return session

    @property
    def writes_files(self) -> bool:
        """Whether a task's fixture files are written into the state folder (reset files or restart)."""
        return self.spec.reset in ("files", "restart")

    @property
    def state_key(self) -> tuple:
        """MCP surfaces read a task's fixtures the same way (``McpStart``) but for whether they write its files:
        checked once per task and kind."""
        return ("mcp", self.writes_files)

    def starting_state(self, fixtures: Mapping[str, Any]) -> McpStart:
        problems = fixture_problems(fixtures)
        if fixtures.get("files") and not self.writes_files:
            reset = "declared setup / teardown calls" if isinstance(self.spec.reset, ResetCalls) else "none"
            problems.append(f"'files' are written only on a surface whose reset is files or restart; this "
                            f"surface's reset is {reset}, which writes no files: the task would start without them")
        return McpStart(problems)


@dataclass(frozen=True)
class McpStart:
    """What the read-only checks learn of a task's fixtures on an MCP surface (``ToolkitStart`` for a toolkit's)."""

    problems: list[str]
    """Why the fixtures cannot be an MCP state (fixtures-schema); empty when they can."""

    def state_path_problem(self, parts: Sequence[str]) -> str | None:
        """Always a reason: an MCP server's state lives in the server, read only through its tools."""
        return ("an MCP surface keeps no state model, so a state path can neither be checked nor scored on it: read "
                "the end state with a probe (assert: probes, a call of one of its tools; assert-probe-known checks "
                "the tool and its arguments, not what the answer holds)")
