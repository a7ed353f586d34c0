"""What the agent loop asks of a surface's backend for one task: fresh state, calls, probes, the end state.

Two backends implement it: a Python toolkit (``ToolkitBackend``, here) and MCP servers
(``tasks/surface/mcp_backend.py``). A call is done, *refused* (an error call) or *invalid* (rejected without
running); a failed surface raises ``SurfaceBroke`` and the task stops with ``surface_error``. A toolkit call
runs in a daemon worker thread, waited for at most the surface's ``call_timeout_s`` and what is left of the
task's ``max_wall_s``; past that it raises ``CallTimedOut``, the session is discarded and the thread is asked
to stop (``CallAbandoned``) — docs/surface/writing-a-surface.md, "hung"."""

from __future__ import annotations

import contextvars
import ctypes
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Protocol, Sequence

from pydantic import BaseModel, ValidationError

from tasks.surface.toolkit import BackendTool, Toolkit, ToolRefused

MAX_DETAIL = 400
DEFAULT_CALL_TIMEOUT_S = 30.0
"""How long a toolkit call is waited for when the surface file does not say (``call_timeout_s``)."""


class SurfaceBroke(Exception):
    """The surface failed, not the call: the task stops with ``surface_error`` and this message."""


class CallTimedOut(SurfaceBroke):
    """A call gave no answer in time; ``wall`` when the limit was the task's wall budget (stop ``max_wall``),
    else the surface's ``call_timeout_s`` (stop ``surface_error``)."""

    def __init__(self, message: str, wall: bool):
        super().__init__(message)
        self.wall = wall


class CallAbandoned(BaseException):
    """Raised inside the worker thread of a call nobody waits for any more, to end a tool that loops."""


def _stop_thread(thread: threading.Thread) -> None:
    """Ask a worker thread to stop: raise ``CallAbandoned`` in it at its next Python instruction."""
    if thread.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(CallAbandoned))


@dataclass(frozen=True)
class CallOutcome:
    """What a backend made of one valid call."""

    value: Any
    """The result as data (what records are counted in, what a probe's matcher reads); None when refused."""
    content: str | None = None
    """The result as sent back to the agent, when the backend gives text (MCP); else the value as JSON."""
    refused: str | None = None
    """Why the backend refused the call (an error call), or None."""
    invalid: str | None = None
    """Why the backend rejected the arguments without running the call (an invalid call), or None."""
    upstream_reads: int = 0
    backend_ms: float = 0.0


class SurfaceSession(Protocol):
    """One task's use of a surface's backend, from fresh state to its end."""

    def call(self, tool: BackendTool, arguments: dict[str, Any]) -> CallOutcome:
        """Run a call whose arguments are valid under the tool's schema (an agent's, or a probe's after the
        run); SurfaceBroke when the surface fails."""
        ...

    def end_state(self) -> Any:
        """The final state for state assertions (a toolkit's state as JSON; None where there is none)."""
        ...

    def close(self, broken: bool) -> None:
        """Release what the task held (an MCP server instance goes back to its pool, unless ``broken``)."""
        ...


class ToolkitSession:
    """A toolkit over one fresh state; each call in a worker thread, waited for at most ``call_timeout_s`` and
    until ``wall_deadline`` (a ``time.perf_counter()`` value the agent loop sets from the task's ``max_wall_s``)."""

    def __init__(self, toolkit: Toolkit, call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S):
        self.toolkit = toolkit
        self.call_timeout_s = call_timeout_s
        self.wall_deadline: float | None = None
        self.abandoned = False
        """A call was given up on: the session's state may still be changed by its thread; discard it."""

    def call(self, tool: BackendTool, arguments: dict[str, Any]) -> CallOutcome:
        if self.abandoned:
            raise SurfaceBroke("the session was discarded after a call that did not answer")
        before = self.toolkit.upstream_reads
        started = time.perf_counter()
        timeout, wall = self.call_timeout_s, False
        if self.wall_deadline is not None and self.wall_deadline - started < timeout:
            timeout, wall = max(self.wall_deadline - started, 0.0), True
        answer: dict[str, Any] = {}

        def work() -> None:
            try:
                answer["value"] = tool.invoke(self.toolkit, arguments)
            except ToolRefused as refusal:
                answer["refused"] = str(refusal)[:MAX_DETAIL] or "refused"
            except CallAbandoned:
                pass
            except Exception as crashed:  # a backend bug is an error call with its type, not a crashed run
                answer["refused"] = f"backend failed: {type(crashed).__name__}: {crashed}"[:MAX_DETAIL]

        context = contextvars.copy_context()  # the tool sees the caller's context (trace spans)
        worker = threading.Thread(target=context.run, args=(work,), name=f"tooleval-call-{tool.name}", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            self.abandoned = True
            _stop_thread(worker)
            waited = time.perf_counter() - started
            if wall:
                raise CallTimedOut(f"tool '{tool.name}' was still running when the task's wall budget (max_wall_s) "
                                   f"ran out, after {waited:.1f} s of the call; the session was discarded", wall=True)
            raise CallTimedOut(f"tool '{tool.name}' did not answer within the surface's call_timeout_s "
                               f"({self.call_timeout_s:g} s); the session was discarded", wall=False)
        return CallOutcome(value=answer.get("value"), refused=answer.get("refused"),
                           upstream_reads=self.toolkit.upstream_reads - before,
                           backend_ms=(time.perf_counter() - started) * 1000)

    def end_state(self) -> Any:
        return self.toolkit.state.model_dump(mode="json")

    def close(self, broken: bool) -> None:
        return None


@dataclass
class ToolkitStart:
    """A task's fixtures built once into a fresh state of ``model`` (None when they are not a valid one), for the
    read-only checks: ``check_tasks`` asks one per task and ``ToolkitBackend.state_key`` for every surface that
    shares the key."""

    model: type[BaseModel]
    state: BaseModel | None
    problems: list[str] = field(default_factory=list)
    """Why the fixtures are not a valid state (fixtures-schema); empty when ``state`` was built."""

    @cached_property
    def start(self) -> Any:
        """The state the task starts from as JSON (what state paths are read against), None without one."""
        return self.state.model_dump(mode="json") if self.state is not None else None

    def state_path_problem(self, parts: Sequence[str]) -> str | None:
        """Why a state assertion's path can name no value of this state (tasks/surface/state_paths.py), or None."""
        from tasks.surface.state_paths import TYPES_FIRST, NeedsStart, state_path_problem

        try:  # most paths are answered by the state model's types: the state's JSON is not needed for them
            return state_path_problem(self.model, TYPES_FIRST, parts)
        except NeedsStart:
            return state_path_problem(self.model, self.start, parts)


@dataclass(frozen=True)
class ToolkitBackend:
    """A Python toolkit class from the task set's backend package."""

    toolkit: type[Toolkit]
    reference: str
    """'module:Class' as the surface file names it."""
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    """How long one call is waited for (the surface file's ``call_timeout_s``)."""

    kind = "toolkit"

    def tools(self) -> dict[str, BackendTool]:
        return self.toolkit.tools()

    def open(self, fixtures: Mapping[str, Any]) -> ToolkitSession:
        return ToolkitSession(self.toolkit(self.toolkit.fresh_state(dict(fixtures))), self.call_timeout_s)

    @property
    def state_key(self) -> tuple:
        """Backends with the same key build the same state from the same fixtures (same state model, same
        ``fresh_state``): the read-only checks build it once per task for all of them."""
        return ("toolkit", self.toolkit.state_model, self.toolkit.fresh_state.__func__)

    def starting_state(self, fixtures: Mapping[str, Any]) -> ToolkitStart:
        """The task's merged fixtures built once into this toolkit's fresh state, for the checks
        fixtures-schema (its ``problems``) and assert-state-path (its ``state_path_problem``)."""
        from tasks.taskset.load_taskset import validation_message

        try:
            state = self.toolkit.fresh_state(dict(fixtures))
        except ValidationError as error:
            return ToolkitStart(self.toolkit.state_model, None,
                                [f"not a valid {self.toolkit.state_model.__name__}: {validation_message(error)}"])
        return ToolkitStart(self.toolkit.state_model, state)
