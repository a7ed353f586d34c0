"""The provider-neutral shape of one chat call and its reply (OpenAI and Anthropic adapters speak it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class WireTool:
    """A tool as sent: its provider-safe name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]
    size: int = 0
    """Characters of name, description and schema (for the spend estimate), counted once."""


@dataclass(frozen=True)
class ChatRequest:
    model: str
    system: str
    messages: tuple[tuple[str, str], ...]
    """(role, content) turns: user / assistant / system, oldest first."""
    tools: tuple[WireTool, ...] = ()
    tool_choice: str | None = None
    """None = nothing sent (the server's default); 'auto' = the model decides, said explicitly; 'none' = no tool;
    'required' = some tool; else the wire name forced."""
    max_tokens: int = 1024
    top_logprobs: int | None = None
    """Ask for this many alternatives of each output token's log-probability (OpenAI-compatible only)."""
    vote_seed: int = 0
    """Added to the provider seed (the judge's votes differ only in it)."""

    @property
    def prompt_chars(self) -> int:
        tools = sum(t.size or len(t.name) + len(t.description) + len(str(t.parameters)) for t in self.tools)
        return len(self.system) + sum(len(c) for _, c in self.messages) + tools


@dataclass(frozen=True)
class ChatReply:
    served_model: str | None
    tool_name: str | None
    """Wire name of the first tool call, None when the reply called no tool."""
    arguments: Any = None
    """Arguments of the first tool call as the provider gave them (JSON text or an object)."""
    text: str = ""
    stop_reason: str | None = None
    input_tokens: int | None = None
    """Every prompt token billed, cached ones included."""
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    """Prompt tokens read from the provider's prompt cache (OpenAI cached_tokens, Anthropic cache reads)."""
    cache_write_tokens: int | None = None
    """Prompt tokens written to the provider's cache with a 5-minute lifetime (Anthropic; billed 1.25x)."""
    cache_write_1h_tokens: int | None = None
    """Prompt tokens written to the cache with a 1-hour lifetime (Anthropic; billed 2x)."""
    n_tool_calls: int = 0
    call_problem: str | None = None
    """Why the first tool call is malformed in its shape (no name, Anthropic ``input`` not an object): the
    row is invalid, whatever the arguments say."""
    top_logprobs: tuple[tuple[str, float], ...] | None = None
    """(token, logprob) alternatives of the first output token, when asked for."""
    unfinished: bool = False
    """The provider stopped before the reply was complete (length / max_tokens / content filter)."""
    refusal: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ChatProvider(Protocol):
    """One provider endpoint behind its official SDK; ``complete`` raises the SDK's exceptions."""

    provider: str
    endpoint: str

    def complete(self, request: ChatRequest, timeout_s: float) -> ChatReply:
        ...
