"""Hosted models as agents (kinds 'openai' and 'anthropic'; any OpenAI-compatible server via ``base_url``),
through the official SDKs and the selection harness's provider layer (``ProviderCaller``: concurrency,
retries, prices, the served-model check, the run's ledger).

Every turn sends the conversation so far with the tools in the seed's order (``wire_tools``) and the arm's
answer-changing options, and reads every tool call of the reply; tool-call markup in a reply with no
structured call becomes the turn's ``text_call``. A turn whose prompt grew by less than the previous reply
plus the tool results fed since (``RESULT_CHARS_PER_TOKEN``, over ``MIN_RESULT_CHARS``) is marked
``results_unseen``: the server's template dropped them. A turn fails (``error``, ``empty_reply``,
``run_budget``) and the run stops with it."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Sequence

from schemas.catalogue import ToolSpec
from schemas.surface.task import SurfaceTask
from tasks.selectors.providers.call_budget import BUDGET_REACHED, RunLedger
from tasks.selectors.providers.provider_calls import ProviderCaller
from tasks.selectors.providers.text_tool_calls import find_text_call
from tasks.selectors.providers.tool_names import ToolNameMap
from tasks.selectors.providers.chat_types import WireTool
from tasks.selectors.providers.wire_tools import wire_tool, wire_tool_choice
from tasks.surface.agent_types import AgentTurn, ProposedCall, ToolResult
from tasks.surface.conversation_wire import (
    Answered,
    AnthropicConversation,
    Called,
    ConversationRequest,
    Event,
    OpenAIConversation,
    Said,
)


RESULT_CHARS_PER_TOKEN = 8
"""Characters of tool results counted as one prompt token when checking that they reached the prompt: half the
~4 of English text and JSON, so a template's own compaction does not read as results dropped."""

MIN_RESULT_CHARS = 80
"""Results shorter than this are too small to tell apart from a template's overhead: not judged."""


class ConversationCaller(ProviderCaller):
    """The provider caller with conversation-speaking adapters."""

    adapters = {"openai": OpenAIConversation, "anthropic": AnthropicConversation}


@dataclasses.dataclass(frozen=True)
class WiredTools:
    """The tools of one order as every turn sends them: wire names, schemas, the arm's tool_choice."""

    names: ToolNameMap
    tools: tuple[WireTool, ...]
    tool_choice: str | None


class ChatSession:
    def __init__(self, agent: "ChatAgent", task: SurfaceTask, wired: WiredTools, prompt: str):
        self.agent = agent
        self.names, self.tools, self.tool_choice = wired.names, wired.tools, wired.tool_choice
        self.system = prompt
        self.events: list[Event] = [Said(m.role, m.content) for m in task.messages]
        self._last_usage: tuple[int | None, int | None] = (None, None)
        """The last reply's prompt and completion tokens."""
        self._fed_chars = 0
        """Characters of tool results fed since the last reply."""

    def next_turn(self) -> AgentTurn:
        agent = self.agent
        request = ConversationRequest(model=agent.model_id, system=self.system, events=tuple(self.events),
                                      tools=self.tools, tool_choice=self.tool_choice,
                                      max_tokens=agent.max_tokens)
        result = agent.caller.call(request, agent.ledger)  # type: ignore[arg-type]
        reply = result.reply
        turn = AgentTurn(cost_usd=result.cost_usd, price_version=agent.caller.price.version,
                         provider_retries=result.retries)
        if reply is not None:
            turn.input_tokens, turn.output_tokens = reply.input_tokens, reply.output_tokens
            turn.served_model = reply.served_model
            turn.results_unseen = self._results_unseen(reply.input_tokens)
            self._last_usage, self._fed_chars = (reply.input_tokens, reply.output_tokens), 0
        if result.detail is not None:
            turn.failed = "run_budget" if result.detail == BUDGET_REACHED else "error"
            turn.detail = result.detail
            return turn
        assert reply is not None
        calls: list[ProposedCall] = list(reply.extra.get("calls") or [])
        if reply.unfinished or (not calls and not reply.text.strip()):
            turn.failed = "empty_reply"
            turn.detail = (f"unfinished reply (stop reason {reply.stop_reason})" if reply.unfinished
                           else "empty reply: no tool call, no text")
            return turn
        turn.text = reply.text
        if calls:
            self.events.append(Called(reply.text, tuple(calls)))
            turn.calls = [dataclasses.replace(c, name=self.names.original(c.name) or c.name) for c in calls]
        else:
            self.events.append(Said("assistant", reply.text))
            found = find_text_call(reply.text)
            if found is not None:  # markup as text: the model tried a call the server did not return as one
                named = self.names.original(found.name) or found.name if found.name else None
                turn.text_call = dataclasses.replace(found, name=named)
        return turn

    def feed(self, results: Sequence[ToolResult]) -> None:
        self.events.append(Answered(tuple((r.call_id, r.content, r.is_error) for r in results)))
        self._fed_chars += sum(len(r.content) for r in results)

    def _results_unseen(self, prompt_tokens: int | None) -> bool:
        before, replied = self._last_usage
        if prompt_tokens is None or before is None or self._fed_chars < MIN_RESULT_CHARS:
            return False
        return prompt_tokens - before < (replied or 0) + self._fed_chars // RESULT_CHARS_PER_TOKEN


class ChatAgent:
    """A hosted chat model running tasks; one per arm and work unit (the SDK client is built once per
    endpoint's caller, and the endpoint's concurrency gate is shared by the whole process)."""

    reads_prompt = True

    def __init__(self, kind: str, model_id: str, options: Mapping[str, Any], ledger: RunLedger):
        self.kind, self.model_id = kind, model_id
        self.caller = ConversationCaller(kind, model_id, options)
        self.max_tokens = int(self.caller.options["max_tokens"])
        self.tool_choice: str | None = self.caller.options.get("tool_choice")
        """The arm's tool_choice (auto / required / none), sent on every turn; unset: nothing is sent."""
        self.ledger = ledger
        self._wired: tuple[tuple[ToolSpec, ...], WiredTools] | None = None

    def wired(self, tools: tuple[ToolSpec, ...]) -> WiredTools:
        """The tools on the wire, worked out once per order: a unit's tasks all offer the seed's order (the
        name map and each schema's rewrite are not redone per task)."""
        last = self._wired
        if last is not None and last[0] == tools:
            return last[1]
        names = ToolNameMap.for_names(t.name for t in tools)
        wire = tuple(wire_tool(t, names.wire(t.name)) for t in tools)
        wired = WiredTools(names, wire, wire_tool_choice(self.tool_choice, names, bool(wire)))
        self._wired = (tools, wired)
        return wired

    def start(self, task: SurfaceTask, tools: tuple[ToolSpec, ...], prompt: str) -> ChatSession:
        return ChatSession(self, task, self.wired(tools), prompt)
