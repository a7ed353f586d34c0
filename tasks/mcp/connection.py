"""A connection to one MCP server through the official SDK (``mcp.Client``), usable from plain threads.

The SDK is async: one event loop per process runs in a daemon thread (``runtime_loop``); each
``ServerConnection`` is one task on it that opens the client, waits until told to close and closes it there
(the SDK's context managers must be left where they were entered). Calls from any thread wait for their answer
with a time limit. A failure of the server itself (it could not start, crashed, hung, or broke the protocol,
e.g. a line on stdout that is not JSON-RPC and no message within ``STDOUT_GRACE_S``) is ``ServerFailed`` with a
named reason, never a hang, and the connection is closed."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import json
import logging
import os
import re
import tempfile
import threading
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.mcp import BASE_DIR, STATE_DIR, McpServer

START_TIMEOUT_S = 30.0
"""Starting a server and its handshake (a cold npx may need a while)."""
CLOSE_TIMEOUT_S = 10.0
STDOUT_GRACE_S = 3.0
"""After a line on stdout that is not JSON-RPC, how long a server that has sent no JSON-RPC message yet has to send
one before it is failed (a banner printed before the server answers is let go)."""
SDK_PARSE_LOG = "Failed to parse JSONRPC message from server"
"""What the SDK logs, with a traceback, for every stdout line it cannot parse: kept out of the log (the
connection names the first such line in its failure instead)."""
ENV_REFERENCE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()
_open: set["ServerConnection"] = set()
"""Connections not closed yet, and failed ones whose servers are still being stopped in the background."""


def runtime_loop() -> asyncio.AbstractEventLoop:
    """The process's MCP event loop, started on first use in a daemon thread."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="mcp-runtime", daemon=True).start()
            _loop = loop
        return _loop


logging.getLogger("mcp.client.stdio").addFilter(lambda record: record.msg != SDK_PARSE_LOG)


def _unparsed_line(error: Exception) -> str:
    """The stdout line the SDK could not read as JSON-RPC (from its ValidationError), short, or the error."""
    errors = getattr(error, "errors", None)
    given: Any = errors()[0].get("input") if callable(errors) and errors() else None
    if given is None:
        return str(error)[:120]
    text = given if isinstance(given, str) else json.dumps(given, ensure_ascii=False, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


class ServerFailed(Exception):
    """The server failed, not the call: it could not start, crashed, hung or broke the protocol."""


@dataclass(frozen=True)
class ServerInfo:
    name: str | None
    version: str | None
    protocol_version: str | None


def _fill(text: str, state_dir: Path | None, base_dir: Path | None = None) -> str:
    """``{state_dir}`` and ``{taskset_dir}`` filled in."""
    if state_dir is not None:
        text = text.replace(STATE_DIR, str(state_dir))
    return text.replace(BASE_DIR, str(base_dir)) if base_dir is not None else text


def resolved_env(server: McpServer, state_dir: Path | None, base_dir: Path | None = None) -> dict[str, str]:
    """The server's env with ``{state_dir}`` filled in and ``$NAME`` values read from this environment
    (a secret named, never written in a surface file); ServerFailed names a ``$NAME`` that is not set."""
    env: dict[str, str] = {}
    for key, value in server.env.items():
        reference = ENV_REFERENCE.match(value)
        if reference:
            if reference.group(1) not in os.environ:
                raise ServerFailed(f"environment variable {reference.group(1)} (for {key}) is not set")
            env[key] = os.environ[reference.group(1)]
        else:
            env[key] = _fill(value, state_dir, base_dir)
    return env


class ServerConnection:
    """One running MCP server with its client session. ``start`` raises ServerFailed; so do ``list_tools``
    and ``call`` when the server (not the tool) fails, after which the connection is closed."""

    def __init__(self, server: McpServer, *, base_dir: Path, state_dir: Path | None = None) -> None:
        self.server, self.base_dir, self.state_dir = server, Path(base_dir), state_dir
        self.info = ServerInfo(None, None, None)
        self._client: Any = None
        self._closing: asyncio.Event | None = None
        self._handshake: Any = None
        """The anyio cancel scope around the client's life: cancelled when the handshake hangs, so the SDK's own
        shielded shutdown stops the process (a native task cancel would leave it running, orphaned)."""
        self._done: concurrent.futures.Future | None = None
        self._log = tempfile.TemporaryFile(mode="w+", prefix="tooleval-mcp-", suffix=".log")
        self.failed: str | None = None
        self.not_json_rpc: str | None = None
        """The first line the server wrote on stdout that is not JSON-RPC, if any."""
        self._stdout_not_mcp = False
        """Such a line came and no JSON-RPC message within STDOUT_GRACE_S: the stream was closed for it."""

    # -- life ---------------------------------------------------------------------------------------------
    def start(self, timeout_s: float = START_TIMEOUT_S) -> "ServerConnection":
        loop = runtime_loop()
        ready: concurrent.futures.Future = concurrent.futures.Future()
        self._done = asyncio.run_coroutine_threadsafe(self._serve(ready), loop)
        _open.add(self)
        try:
            ready.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            if self._handshake is not None:
                loop.call_soon_threadsafe(self._handshake.cancel)
            self._fail(f"did not answer the MCP handshake within {timeout_s:g} s")
            raise ServerFailed(self.failed) from None
        except ServerFailed:
            raise
        except BaseException as error:  # noqa: BLE001 - any way of not starting is a named failure
            self._fail(f"could not start: {self._reason(error)}")
            raise ServerFailed(self.failed) from None
        return self

    async def _serve(self, ready: concurrent.futures.Future) -> None:
        import anyio
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters, stdio_client

        self._closing = asyncio.Event()
        try:
            with anyio.CancelScope() as self._handshake:
                if self.server.url is not None:
                    target: Any = self.server.url
                else:
                    cwd = _fill(self.server.cwd, self.state_dir, self.base_dir) if self.server.cwd else None
                    params = StdioServerParameters(
                        command=_fill(self.server.command or "", self.state_dir, self.base_dir),
                        args=[_fill(a, self.state_dir, self.base_dir) for a in self.server.args],
                        env=resolved_env(self.server, self.state_dir, self.base_dir),
                        cwd=str(self.base_dir / cwd) if cwd else str(self.base_dir))
                    target = self._stdio(stdio_client(params, errlog=self._log))
                async with Client(target, client_info=_client_info()) as client:
                    self._client = client
                    info = client.server_info
                    self.info = ServerInfo(info.name if info else None, info.version if info else None,
                                           client.protocol_version)
                    ready.set_result(None)
                    await self._closing.wait()
            if not ready.done():  # start gave up on a hung handshake: the SDK has stopped the process
                ready.set_exception(ServerFailed("stopped: no answer to the MCP handshake"))
        except BaseException as error:  # noqa: BLE001 - reported to whoever waits, never raised into the loop
            if not ready.done():
                ready.set_exception(ServerFailed(f"could not start: {self._reason(error)}"))
            elif self.failed is None:
                self.failed = f"stopped: {self._reason(error)}"
        finally:
            self._client = None

    @asynccontextmanager
    async def _stdio(self, transport: Any) -> Any:
        """The SDK's stdio transport with its read stream watched: a line that is not JSON-RPC is noted
        (``not_json_rpc``: the first) and dropped; when no JSON-RPC message has come yet and none follows within
        ``STDOUT_GRACE_S``, the stream is closed, which ends the handshake (or the call) waiting for an answer."""
        import anyio

        async with transport as (read_stream, write_stream):
            send, receive = anyio.create_memory_object_stream(0)
            answered = anyio.Event()

            async def give_up_unless_answered() -> None:
                with anyio.move_on_after(STDOUT_GRACE_S):
                    await answered.wait()
                if not answered.is_set():
                    self._stdout_not_mcp = True
                    send.close()

            async def forward() -> None:
                try:
                    async with send:
                        async for item in read_stream:
                            if isinstance(item, Exception):
                                if self.not_json_rpc is None:
                                    self.not_json_rpc = _unparsed_line(item)
                                    if not answered.is_set():
                                        group.start_soon(give_up_unless_answered)
                                continue
                            answered.set()
                            await send.send(item)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    pass

            async with anyio.create_task_group() as group:
                group.start_soon(forward)
                try:
                    yield receive, write_stream
                finally:
                    group.cancel_scope.cancel()

    def close(self, wait: bool = True) -> None:
        """Stop the server (idempotent). ``wait``: until the SDK has wound the process down (bounded: it
        closes stdin, then terminates, then kills the process tree); else that goes on in the background."""
        loop, closing, done = runtime_loop(), self._closing, self._done
        if closing is not None:
            loop.call_soon_threadsafe(closing.set)
        if done is not None and wait:
            try:
                done.result(timeout=CLOSE_TIMEOUT_S)
            except BaseException:  # noqa: BLE001 - closing never raises
                done.cancel()
        if wait:
            self._done = None
            _open.discard(self)
        with suppress(OSError):
            self._log.close()

    def _fail(self, reason: str) -> None:
        """A failed server is stopped in the background: the task that met the failure goes on at once."""
        if self.failed is None:
            self.failed = reason
        self.close(wait=False)

    @property
    def alive(self) -> bool:
        return self.failed is None and self._client is not None

    # -- requests -----------------------------------------------------------------------------------------
    def _request(self, make, timeout_s: float, what: str) -> Any:
        """Run ``make(client)`` on the loop; ServerFailed (and the connection closed) when the server fails."""
        if not self.alive:
            raise ServerFailed(self.failed or "not started")
        client = self._client
        future = asyncio.run_coroutine_threadsafe(asyncio.wait_for(make(client), timeout_s), runtime_loop())
        try:
            return future.result(timeout=timeout_s + 5.0)
        except (asyncio.TimeoutError, concurrent.futures.TimeoutError, TimeoutError):
            future.cancel()
            self._fail(self._hung(what, timeout_s))
        except Exception as error:
            code = getattr(error, "code", None) if _is_mcp_error(error) else None
            if code == REQUEST_TIMEOUT:
                self._fail(self._hung(what, timeout_s))
            elif code is not None and code != CONNECTION_CLOSED:
                raise  # the server answered this request with an MCP error (e.g. -32602): not a failure
            else:
                self._fail(f"failed during {what}: {self._reason(error)}")
        raise ServerFailed(self.failed)

    def list_tools(self, timeout_s: float = START_TIMEOUT_S) -> list[Any]:
        """Every tool the server lists (all pages), as ``mcp_types.Tool``."""

        async def every_page(client: Any) -> list[Any]:
            tools, cursor = [], None
            for _ in range(1000):
                page = await client.list_tools(cursor=cursor)
                tools += page.tools
                cursor = page.next_cursor
                if not cursor:
                    return tools
            raise ServerFailed("tools/list kept paging past 1,000 pages")

        return self._request(every_page, timeout_s, "tools/list")

    def call(self, name: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        """``tools/call``: the ``CallToolResult``; an MCP error answer (e.g. -32602 invalid params) is raised
        as the SDK's ``MCPError``; a failure of the server is ServerFailed."""
        return self._request(lambda client: client.call_tool(name, arguments, read_timeout_seconds=timeout_s),
                             timeout_s, f"tools/call {name}")

    # -- what went wrong ----------------------------------------------------------------------------------
    def _hung(self, what: str, timeout_s: float) -> str:
        """'hung: no answer to ...', with the first line the server wrote on stdout that is not JSON-RPC, if any
        (a tool that prints to stdout writes into the protocol channel)."""
        said = (f"; it wrote a line on stdout that is not JSON-RPC: {self.not_json_rpc!r}"
                if self.not_json_rpc is not None else "")
        return f"hung: no answer to {what} within {timeout_s:g} s{said}"

    def _reason(self, error: BaseException) -> str:
        """The error in one line, with the server's last stderr line when it said something."""
        inner = error
        while isinstance(inner, BaseExceptionGroup) and inner.exceptions:
            inner = inner.exceptions[0]
        if self._stdout_not_mcp:
            text = (f"wrote a line on stdout that is not JSON-RPC: {self.not_json_rpc!r} (stdout is the MCP "
                    "channel: a server writes only JSON-RPC messages there, its logs go to stderr)")
        elif isinstance(inner, FileNotFoundError):
            text = f"command not found: {self.server.command}"
        elif isinstance(inner, ServerFailed):
            text = str(inner)
        else:
            text = f"{type(inner).__name__}: {inner}".strip().rstrip(":")
        said = self.stderr_tail()
        return f"{text}{f' (stderr: {said})' if said else ''}"[:400]

    def stderr_tail(self, lines: int = 2) -> str:
        """The last lines the server wrote on stderr (its log), one line."""
        try:
            self._log.flush()
            self._log.seek(0)
            tail = [line.strip() for line in self._log.read().splitlines() if line.strip()][-lines:]
        except (OSError, ValueError):
            return ""
        return " | ".join(tail)[:200]


def close_all() -> None:
    """Stop every server this process started and wait for them (at exit, and when a run's units are done):
    no server outlives the run, a hung one included."""
    for connection in list(_open):
        connection.close(wait=True)


atexit.register(close_all)

CONNECTION_CLOSED, REQUEST_TIMEOUT = -32000, -32001
"""The SDK's own codes (never on the wire): the connection closed before an answer; no answer in time."""


def _is_mcp_error(error: BaseException) -> bool:
    from mcp.shared.exceptions import MCPError

    return isinstance(error, MCPError)


def _client_info() -> Any:
    from importlib.metadata import PackageNotFoundError, version

    from mcp_types import Implementation

    try:
        ours = version("tooleval")
    except PackageNotFoundError:
        ours = "unknown"
    return Implementation(name="tooleval", version=ours)
