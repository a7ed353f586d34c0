"""A surface served by MCP servers: their tools as backend tools, warm server instances, fresh state per task.

Tools and marks. A surface's tools are the tools its servers list (or, for a server pinned to an imported
catalogue, the catalogue's: the surface resolves without starting it). ``marks_from_annotations`` turns a
tool's MCP annotations into the tool marks the counters hang on, with the MCP specification's defaults
where the server said nothing (not read-only, destructive, open-world):

- writes: not read-only; irreversible: writes and destructive;
- upstream reads: one per executed call of a tool that reads (read-only) or reaches beyond the server
  (open-world); a server reports no pages, so a call is one read;
- handoff: never from annotations (MCP has no such hint);

and the surface file's ``marks:`` override any of them per tool (``read_only`` stands for the tool's
readOnlyHint; ``writes`` / ``irreversible`` / ``handoff`` / ``upstream_reads`` set a mark outright). A server
that gives no annotation on any tool, and none of whose tools the surface marks, has every tool counted as
the defaults say — a write, irreversible, one upstream read a call — and the surface carries a warning that
says so (``unannotated_warnings``: printed by ``tooleval validate`` and on the report's first screen).

Errors written as text. A result with ``isError`` is an error call (executed, refused); so is a result
without it whose text matches the ``error_text`` matcher the surface declares for the tool (``marks``) or
its server (``servers``) — for servers such as mcp-server-sqlite that answer "Database error: ..." as a
plain result.

Instances. An instance is one process per server of the surface, sharing a state folder
(``{state_dir}``). Instances are kept warm in a pool per surface and process, so start-up is paid once per
concurrent task, not per task; each task takes an instance, which is first reset to the task's fixtures
(``reset: files``: the state folder emptied, the surface's ``make_dirs`` made, the fixture files written;
``restart``: a new instance for every task; ``none``: nothing; ``{setup: [...], teardown: [...]}``: declared
calls, for a URL server whose state tooleval can neither empty nor restart), then the task's ``setup`` calls
run. A task returns its instance when it ends; one whose server failed is closed, and the next task starts a
new one. No task sees another's writes: one task holds an instance at a time and every task starts from a
reset.

Declared reset calls. ``setup`` runs before each task (before the task's own setup calls); a call that fails
(an MCP error, an ``isError`` result, a text matching ``error_text``, or the server failing) stops the task
with ``surface_error`` and the failed call in its detail: the task is not carried out (NOT JUDGED, never a
0%). ``teardown`` runs when the task ends, if its server still answers; a failed teardown call is appended
to the task's detail, the instance is closed, and the teardown is made again before the next task: that task
is carried out only once it succeeds (else it is not carried out, naming the teardown). A task whose server
failed leaves its teardown pending the same way. Tasks on a URL server share the one state the server keeps,
so a process runs the tasks of such a surface one at a time (``InstancePool.serial``, held from the setup to
the teardown; the wait counts in a task's wall time); processes of a distributed run are not kept apart.

Fixtures of a task on an MCP surface: ``files`` (path under the state folder -> content: a string as
text, a list as JSON Lines (one JSON value a line, as the memory server keeps its graph), an object as
JSON) and ``setup`` (calls ``{"tool": T, "args": {...}}`` made through the servers before the agent
starts; not counted).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from schemas.catalogue import ToolSpec
from schemas.mcp import McpAnnotations
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
from tasks.mcp.tool_listing import annotations_of, tool_spec
from tasks.surface.surface_session import MAX_DETAIL, CallOutcome, CallTimedOut, SurfaceBroke
from tasks.surface.tool_marks import marks_from_annotations
from tasks.surface.toolkit import BackendTool

INVALID_PARAMS = -32602
"""JSON-RPC's invalid params: the server's own validation rejected the arguments (an invalid call)."""
FIXTURE_KEYS = ("files", "setup")


def backend_tools(listed: Mapping[str, tuple[list[ToolSpec], dict[str, McpAnnotations]]],
                  overrides: Mapping[str, ToolMarkOverride]) -> dict[str, BackendTool]:
    """Every server's tools (server name -> (tools, annotations)) as backend tools, in server order."""
    tools: dict[str, BackendTool] = {}
    for server, (specs, given) in listed.items():
        for spec in specs:
            marks, reads = marks_from_annotations(given.get(spec.name), overrides.get(spec.name))
            tools[spec.name] = BackendTool(name=spec.name, description=spec.description, parameters=spec.parameters,
                                           marks=marks, server=server, reads_per_call=reads)
    return tools


def unannotated_warnings(listed: Mapping[str, tuple[list[ToolSpec], dict[str, McpAnnotations]]],
                         overrides: Mapping[str, ToolMarkOverride]) -> tuple[str, ...]:
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


def listed_tools(connection: ServerConnection) -> tuple[list[ToolSpec], dict[str, McpAnnotations]]:
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
            connection = ServerConnection(server, base_dir=self.backend.base_dir, state_dir=self.state_dir, label=name)
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

    def probe(self, tool: BackendTool, arguments: dict[str, Any]) -> CallOutcome:
        return self.call(tool, arguments)

    def end_state(self) -> Any:
        return None

    def setup(self, calls: list[dict[str, Any]]) -> None:
        """The task's setup calls, before the agent starts; one that does not succeed stops the task."""
        for call in calls:
            tool = self.backend.tools().get(call["tool"])
            if tool is None:
                raise SurfaceBroke(f"setup call of unknown tool '{call['tool']}'")
            outcome = self.call(tool, dict(call.get("args") or {}))
            if outcome.refused or outcome.invalid:
                raise SurfaceBroke(f"setup call {call['tool']} failed: {outcome.refused or outcome.invalid}")

    def reset_calls(self, calls: Sequence[ResetCall], what: str) -> None:
        """The surface's declared setup or teardown calls; SurfaceBroke naming the one that did not succeed."""
        for call in calls:
            tool = self.backend.tools()[call.tool]
            outcome = self.call(tool, dict(call.arguments))
            if outcome.refused or outcome.invalid:
                raise SurfaceBroke(f"reset {what} call {call.tool} failed: {outcome.refused or outcome.invalid}")

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
                    self.reset_calls(reset.teardown, "teardown")
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
    pinned: dict[str, tuple[list[ToolSpec], dict[str, McpAnnotations]]]
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
        reset = self.spec.reset
        if isinstance(reset, ResetCalls):
            pool.serial.acquire()  # released when the task's session closes (or here, when it cannot open)
        try:
            instance = pool.acquire(fixtures)
        except BaseException:
            if isinstance(reset, ResetCalls):
                pool.serial.release()
            raise
        session = McpSession(self, pool, instance)
        try:
            if isinstance(reset, ResetCalls):
                pending = pool.teardown_pending
                if pending is not None and reset.teardown:
                    try:
                        session.reset_calls(reset.teardown, "teardown")
                    except SurfaceBroke as again:
                        raise SurfaceBroke(f"the teardown after an earlier task is still pending ({pending}) and "
                                           f"failed again before this task: {again}") from None
                    pool.teardown_pending = None
                session.reset_calls(reset.setup, "setup")
            session.setup(list(fixtures.get("setup") or []))
        except BaseException as broke:  # SurfaceBroke, or anything unforeseen: never keep the instance or the turn
            if isinstance(reset, ResetCalls) and reset.teardown and pool.teardown_pending is None:
                pool.teardown_pending = f"a task's setup did not complete: {broke}"
            pool.release(instance, broken=True)
            if isinstance(reset, ResetCalls):
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
    """What the read-only checks learn of a task's fixtures on an MCP surface (see
    tasks/surface/starting_state.py for a toolkit's)."""

    problems: list[str]
    """Why the fixtures cannot be an MCP state (fixtures-schema); empty when they can."""

    def state_path_problem(self, parts: Sequence[str]) -> str | None:
        """Always a reason: an MCP server's state lives in the server, read only through its tools."""
        return ("an MCP surface keeps no state model, so a state path can neither be checked nor scored on it: read "
                "the end state with a probe (assert: probes, a call of one of its tools; assert-probe-known checks "
                "the tool and its arguments, not what the answer holds)")
