"""What the agent loop asks of an agent: one turn at a time (tool calls and/or text), then the results.
Two kinds implement it: the offline baseline (``baseline_agent``) and hosted chat models (``chat_agent``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from schemas.catalogue import ToolSpec
from schemas.surface.task import SurfaceTask
from tasks.selectors.providers.text_tool_calls import TextCall

HOSTED_AGENT_WIRE = "2026-12: tool_choice sent, text calls read, content \"\""
"""What hosted task agents (chat_agent.py) send and how their replies are read, in the task cache key
(``run_unit.agent_fingerprint``): change it whenever either changes."""

BASELINE_FILLING = "2026-12 fixtures: repository paths and ids; no request text for a path"
"""How the baseline (baseline_agent.py) fills arguments, in its task cache key (``run_unit.agent_fingerprint``):
change it whenever that changes."""


@dataclass(frozen=True)
class ProposedCall:
    """A tool call as the agent made it: its id (for the result), the name (offered or not), raw arguments."""

    call_id: str
    name: str
    arguments: Any
    """JSON text (OpenAI-style) or an object (Anthropic-style), as the agent gave them."""
    unfilled: tuple[str, ...] = ()
    """Required arguments the agent made the call without because it had no value for them (the offline baseline
    says so; a model does not): the call is invalid with ``unfilled_reason`` (tasks/surface/execute_call.py)."""


UNFILLED_REASON = "the agent could not fill argument "
"""How an invalid call's reason starts when the agent had no value for a required argument: the names follow,
comma-separated, then ': ' and the schema's complaint (tasks/surface/views/task_unfilled_arguments.sql reads them)."""


def unfilled_reason(names: tuple[str, ...], detail: str) -> str:
    return f"{UNFILLED_REASON}{','.join(names)}: {detail}"


@dataclass(frozen=True)
class ToolResult:
    """The result of one call as sent back to the agent."""

    call_id: str
    name: str
    content: str
    is_error: bool


@dataclass
class AgentTurn:
    calls: list[ProposedCall] = field(default_factory=list)
    text: str = ""
    text_call: TextCall | None = None
    """Tool-call markup in the text of a reply with no structured call (the tool named as offered, when the
    markup names one): the loop records an invalid call written as text and stops with ``text_call``."""
    failed: str | None = None
    """None, or the stop reason this turn forces: 'error', 'empty_reply', 'run_budget'."""
    detail: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    price_version: str | None = None
    served_model: str | None = None
    provider_retries: int = 0
    results_unseen: bool = False
    """The prompt of this turn did not grow by the tool results fed after the last one (the server's template
    may drop them: ``tasks/surface/chat_agent.py`` ``RESULT_CHARS_PER_TOKEN``)."""


class AgentSession(Protocol):
    """One run of one task: the conversation so far."""

    def next_turn(self) -> AgentTurn:
        ...

    def feed(self, results: Sequence[ToolResult]) -> None:
        """The results of the last turn's calls, in the order they were made."""
        ...


class Agent(Protocol):
    kind: str
    model_id: str
    reads_prompt: bool
    """False for the offline baseline: the report says its prompt arms measure nothing."""

    def start(self, task: SurfaceTask, tools: tuple[ToolSpec, ...], prompt: str) -> AgentSession:
        """A session for one task, tools offered in the seed's order. An agent whose class sets ``reads_fixtures``
        (the offline baseline: repository paths and ids) is started with ``fixtures=`` too, the task's merged
        fixtures (tasks/surface/agent_loop.py); a model is not: it knows only what the request and results say."""
        ...
