"""Multi-turn conversations with tool calls and tool results, on the wire of each provider: the whole
conversation every turn, and *every* call of the reply read. The adapters subclass the selection harness's
(``tasks/selectors/providers/openai_chat.py``, ``anthropic_messages.py``), so the SDK client, sampling options
and reply parsing stay one implementation."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Mapping

from tasks.selectors.providers.anthropic_messages import AnthropicMessages
from tasks.selectors.providers.chat_types import ChatReply, ChatRequest, WireTool
from tasks.selectors.providers.openai_chat import OpenAIChat
from tasks.surface.agent_types import ProposedCall


@dataclass(frozen=True)
class Said:
    """A plain text turn of the conversation (user, or assistant without calls)."""

    role: str
    text: str


@dataclass(frozen=True)
class Called:
    """An assistant turn with tool calls (and perhaps text)."""

    text: str
    calls: tuple[ProposedCall, ...]


@dataclass(frozen=True)
class Answered:
    """The results of the previous assistant turn's calls, in order."""

    results: tuple[tuple[str, str, bool], ...]
    """(call id, content, is_error)."""


Event = Said | Called | Answered


@dataclass(frozen=True)
class ConversationRequest:
    """One turn's request: the whole conversation so far. Speaks the ``ChatRequest`` fields the provider
    caller reads (model, max_tokens, prompt size for the spend estimate)."""

    model: str
    system: str
    events: tuple[Event, ...]
    tools: tuple[WireTool, ...]
    max_tokens: int
    tool_choice: str | None = None
    top_logprobs: int | None = None
    vote_seed: int = 0

    @property
    def prompt_chars(self) -> int:
        size = len(self.system) + sum(t.size or len(t.name) + len(t.description) + len(str(t.parameters))
                                      for t in self.tools)
        for event in self.events:
            if isinstance(event, Said):
                size += len(event.text)
            elif isinstance(event, Called):
                size += len(event.text) + sum(len(c.name) + len(str(c.arguments)) for c in event.calls)
            else:
                size += sum(len(content) for _, content, _ in event.results)
        return size

    def base(self) -> ChatRequest:
        """The single-turn request the selection adapters build the options and tools from."""
        return ChatRequest(model=self.model, system=self.system, messages=(), tools=self.tools,
                           tool_choice=self.tool_choice, max_tokens=self.max_tokens, vote_seed=self.vote_seed)


def _arguments_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments if arguments is not None else {})


def openai_messages(request: ConversationRequest) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
    for event in request.events:
        if isinstance(event, Said):
            messages.append({"role": event.role, "content": event.text})
        elif isinstance(event, Called):
            # "content": "" even when empty: llama.cpp and llama-cpp-python refuse null or a missing key,
            # and every other server named in the docs takes an empty string
            messages.append({"role": "assistant", "content": event.text or "", "tool_calls": [
                {"id": c.call_id, "type": "function",
                 "function": {"name": c.name, "arguments": _arguments_text(c.arguments)}} for c in event.calls]})
        else:
            messages += [{"role": "tool", "tool_call_id": call_id, "content": content}
                         for call_id, content, _ in event.results]
    return messages


def anthropic_messages(request: ConversationRequest) -> tuple[list[str], list[dict[str, Any]]]:
    """(system parts, messages); consecutive turns of one role are merged, as the API requires."""
    system = [request.system] if request.system else []
    messages: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += blocks
        else:
            messages.append({"role": role, "content": blocks})

    for event in request.events:
        if isinstance(event, Said):
            if event.role == "system":
                system.append(event.text)
            else:
                add(event.role, [{"type": "text", "text": event.text}])
        elif isinstance(event, Called):
            blocks: list[dict[str, Any]] = [{"type": "text", "text": event.text}] if event.text else []
            for call in event.calls:
                arguments = call.arguments
                if isinstance(arguments, str):
                    try:
                        arguments = json.loads(arguments)
                    except json.JSONDecodeError:
                        arguments = {}
                blocks.append({"type": "tool_use", "id": call.call_id, "name": call.name,
                               "input": arguments if isinstance(arguments, dict) else {}})
            add("assistant", blocks)
        else:
            add("user", [{"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}
                         for call_id, content, is_error in event.results])
    return system, messages


class OpenAIConversation(OpenAIChat):
    """OpenAI chat completions (or any OpenAI-compatible server) over a whole conversation."""

    def request_body(self, request: ConversationRequest) -> dict[str, Any]:  # type: ignore[override]
        body = super().request_body(request.base())
        body["extra_body"]["messages"] = openai_messages(request)
        return body

    @staticmethod
    def read_reply(data: Mapping[str, Any]) -> ChatReply:
        reply = OpenAIChat.read_reply(data)
        choices = data.get("choices") or []
        message = (choices[0].get("message") or {}) if choices else {}
        calls = [ProposedCall(str(c.get("id") or f"call_{i}"), (c.get("function") or {}).get("name") or "",
                          (c.get("function") or {}).get("arguments"))
                 for i, c in enumerate(message.get("tool_calls") or [])]
        return dataclasses.replace(reply, extra={"calls": calls})


class AnthropicConversation(AnthropicMessages):
    """Anthropic messages over a whole conversation."""

    def request_body(self, request: ConversationRequest) -> dict[str, Any]:  # type: ignore[override]
        body = super().request_body(request.base())
        system, messages = anthropic_messages(request)
        if system:
            body["system"] = "\n\n".join(system)
        body["extra_body"]["messages"] = messages
        return body

    @staticmethod
    def read_reply(data: Mapping[str, Any]) -> ChatReply:
        reply = AnthropicMessages.read_reply(data)
        calls = [ProposedCall(str(b.get("id") or f"toolu_{i}"), b.get("name") or "", b.get("input"))
                 for i, b in enumerate(data.get("content") or []) if b.get("type") == "tool_use"]
        return dataclasses.replace(reply, extra={"calls": calls})
