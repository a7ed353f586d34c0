"""What the agent loop asks of a surface's backend for one task: fresh state, calls, probes, the end state.

Two backends implement it: a Python toolkit (``ToolkitBackend``: typed tools over a pydantic state, built
fresh from the task's fixtures) and MCP servers (``tasks/surface/mcp_backend.py``: server instances whose
state is reset to the task's fixture files). A backend tool call ends one of three ways, counted apart as
seed 001 asks: done, *refused* (an error call: the backend ran it and said no), or *invalid* (the backend
rejected the arguments without running it: an MCP server's -32602). When the surface itself fails (a
server that cannot start, crashes or hangs) the call raises ``SurfaceBroke`` and the task stops with
``surface_error``.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence

from pydantic import ValidationError

from tasks.surface.toolkit import BackendTool, Toolkit, ToolRefused

MAX_DETAIL = 400


class SurfaceBroke(Exception):
    """The surface failed, not the call: the task stops with ``surface_error`` and this message."""


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
        """Run a call whose arguments are valid under the tool's schema; SurfaceBroke when the surface fails."""
        ...

    def probe(self, tool: BackendTool, arguments: dict[str, Any]) -> CallOutcome:
        """A call made after the run to read the end state (not counted, not recorded)."""
        ...

    def end_state(self) -> Any:
        """The final state for state assertions (a toolkit's state as JSON; None where there is none)."""
        ...

    def close(self, broken: bool) -> None:
        """Release what the task held (an MCP server instance goes back to its pool, unless ``broken``)."""
        ...


class ToolkitSession:
    """A toolkit over one fresh state."""

    def __init__(self, toolkit: Toolkit):
        self.toolkit = toolkit

    def call(self, tool: BackendTool, arguments: dict[str, Any]) -> CallOutcome:
        before = self.toolkit.upstream_reads
        started = time.perf_counter()
        value, refused = None, None
        try:
            value = tool.invoke(self.toolkit, arguments)
        except ToolRefused as refusal:
            refused = str(refusal)[:MAX_DETAIL] or "refused"
        except Exception as crashed:  # a backend bug is an error call with its type, not a crashed run
            refused = f"backend failed: {type(crashed).__name__}: {crashed}"[:MAX_DETAIL]
        return CallOutcome(value=value, refused=refused, upstream_reads=self.toolkit.upstream_reads - before,
                           backend_ms=(time.perf_counter() - started) * 1000)

    def probe(self, tool: BackendTool, arguments: dict[str, Any]) -> CallOutcome:
        return self.call(tool, arguments)

    def end_state(self) -> Any:
        return self.toolkit.state.model_dump(mode="json")

    def close(self, broken: bool) -> None:
        return None


@dataclass(frozen=True)
class ToolkitBackend:
    """A Python toolkit class from the task set's backend package."""

    toolkit: type[Toolkit]
    reference: str
    """'module:Class' as the surface file names it."""

    kind = "toolkit"

    def tools(self) -> dict[str, BackendTool]:
        return self.toolkit.tools()

    def open(self, fixtures: Mapping[str, Any]) -> ToolkitSession:
        return ToolkitSession(self.toolkit(self.toolkit.fresh_state(dict(fixtures))))

    def fixture_problems(self, fixtures: Mapping[str, Any]) -> list[str]:
        """Why the task's merged fixtures are not a valid state for this toolkit (empty: they are)."""
        from tasks.taskset.load_taskset import validation_message

        try:
            self.toolkit.state_model.model_validate(copy.deepcopy(dict(fixtures)))
        except ValidationError as error:
            return [f"not a valid {self.toolkit.state_model.__name__}: {validation_message(error)}"]
        return []

    def state_path_problem(self, parts: Sequence[str], fixtures: Mapping[str, Any]) -> str | None:
        """Why a state assertion's path can name no value of this toolkit's state, or None (the rule is in
        tasks/surface/state_paths.py): read from the state model's types, else from ``fixtures`` as this
        backend materialises them (the state the task starts from)."""
        from tasks.surface.state_paths import state_path_problem

        try:
            start = self.toolkit.fresh_state(dict(fixtures)).model_dump(mode="json")
        except (ValidationError, TypeError, ValueError):  # fixtures-schema says why
            start = None
        return state_path_problem(self.toolkit.state_model, start, parts)
