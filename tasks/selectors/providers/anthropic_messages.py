"""Anthropic messages with tools, through the official ``anthropic`` SDK.

The SDK (2.x) speaks API version 2026-10-21, which refuses every sampling parameter (temperature, top_p,
top_k) on every model; Anthropic has no seed. So by default nothing is sent for sampling and the arm's
answers are as repeatable as the model makes them (the seeds' spread shows how much). An arm that must
set a temperature states ``api_version: "2023-06-01"`` with it; the temperature then goes in the body
(``extra_body``, as the SDK's migration guide says) under that version.

The agent prompt and any system turns of the conversation go in ``system``; the first ``tool_use``
block of the reply is the choice. The last tool carries a ``cache_control`` breakpoint, so the tool list
is written to Anthropic's prompt cache once (5-minute lifetime, billed 1.25x) and read by the requests of
the same (arm, seed) that follow (billed at the cache-read rate); a prompt shorter than the model's
minimum cacheable length is simply not cached.
"""

from __future__ import annotations

from typing import Any, Mapping

from tasks.selectors.providers.chat_types import ChatReply, ChatRequest
from tasks.selectors.providers.reply_body import reply_json
from tasks.selectors.providers.sdk_clients import shared_client

DEFAULT_BASE_URL = "https://api.anthropic.com"
SAMPLING_API_VERSION = "2023-06-01"
UNFINISHED = {"max_tokens", "model_context_window_exceeded", "pause_turn", "refusal"}
NAMED_CHOICES = {"auto": "auto", "none": "none", "required": "any"}
"""A named tool_choice as the Messages API spells it."""


class AnthropicMessages:
    """The Anthropic side of ``ChatProvider``."""

    provider = "anthropic"

    def __init__(self, api_key: str, base_url: str, options: Mapping[str, Any]):
        import anthropic

        self.endpoint = base_url
        self.options = dict(options)
        headers = {"anthropic-version": str(options["api_version"])} if options.get("api_version") else None
        self._client = shared_client("anthropic", base_url, api_key, tuple(sorted((headers or {}).items())),
                                     lambda: anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0,
                                                                 default_headers=headers))

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The keyword arguments of ``messages.create`` (no secrets: the key is on the client)."""
        system_parts = [request.system] if request.system else []
        messages: list[dict[str, Any]] = []
        for role, content in request.messages:
            if role == "system":
                system_parts.append(content)
            else:
                messages.append({"role": role, "content": content})
        body: dict[str, Any] = {"model": request.model, "max_tokens": request.max_tokens, "messages": []}
        if system_parts:
            body["system"] = "\n\n".join(system_parts)
        # the conversation and the tools in extra_body, as for OpenAI: sent verbatim, not walked by the
        # SDK's typed-params transform (the JSON on the wire is the same)
        extra: dict[str, Any] = {"messages": messages}
        if request.tools:
            extra["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                              for t in request.tools]
            # a cache breakpoint after the tool list: the tools (in the seed's order) are most of every prompt
            # and the same for every request of an (arm, seed), which the prefix lanes send together
            extra["tools"][-1]["cache_control"] = {"type": "ephemeral"}
            if request.tool_choice in NAMED_CHOICES:
                extra["tool_choice"] = {"type": NAMED_CHOICES[request.tool_choice]}
            elif request.tool_choice is not None:
                extra["tool_choice"] = {"type": "tool", "name": request.tool_choice}
        if self.options.get("temperature") is not None:
            extra["temperature"] = float(self.options["temperature"])
        body["extra_body"] = extra
        return body

    def complete(self, request: ChatRequest, timeout_s: float) -> ChatReply:
        # the raw response, read as JSON (see openai_chat): the SDK still sends, authenticates and raises
        raw = self._client.messages.with_raw_response.create(**self.request_body(request), timeout=timeout_s)
        response = raw.http_response
        return self.read_reply(reply_json(response.content, response.headers.get("content-type"), self.provider))

    @staticmethod
    def read_reply(data: Mapping[str, Any]) -> ChatReply:
        """A ChatReply from the JSON of a message (``reply_json`` has refused error bodies).

        Blocks other than text and tool_use (thinking, server tools) are skipped; a tool_use whose ``input``
        is not an object (the API defines one) or that has no name is a ``call_problem`` (invalid). Cache
        writes are split by lifetime when the usage says (``cache_creation``), else counted as 5-minute."""
        usage = data.get("usage") or {}
        fresh = usage.get("input_tokens")
        cache_read = usage.get("cache_read_input_tokens") or 0
        cache_write = usage.get("cache_creation_input_tokens") or 0
        split = usage.get("cache_creation") or {}
        write_1h = int(split.get("ephemeral_1h_input_tokens") or 0)
        write_5m = int(split["ephemeral_5m_input_tokens"]) if "ephemeral_5m_input_tokens" in split else \
            max(cache_write - write_1h, 0)
        blocks = [b for b in data.get("content") or [] if isinstance(b, Mapping)]
        uses = [b for b in blocks if b.get("type") == "tool_use"]
        text = "".join(b.get("text") or "" for b in blocks if b.get("type") == "text")
        first = uses[0] if uses else None
        name = first.get("name") if first else None
        problem = None
        if first is not None:
            if not isinstance(name, str) or not name.strip():
                problem, name = "a tool_use block without a tool name", None
            elif not isinstance(first.get("input"), Mapping):
                kind = {str: "a string", list: "an array", type(None): "null"}.get(type(first.get("input")), "a value")
                problem = (f"the input of tool_use {name} is not a JSON object but {kind} (the Messages API "
                           "defines input as an object)")
        stop = data.get("stop_reason")
        return ChatReply(
            served_model=data.get("model") or None,
            tool_name=name,
            arguments=first.get("input") if first else None,
            text=text,
            stop_reason=stop,
            input_tokens=None if fresh is None else fresh + cache_read + write_5m + write_1h,
            output_tokens=usage.get("output_tokens"),
            cached_input_tokens=cache_read,
            cache_write_tokens=write_5m,
            cache_write_1h_tokens=write_1h,
            n_tool_calls=len(uses),
            call_problem=problem,
            unfinished=stop in UNFINISHED,
            refusal=text if stop == "refusal" else None,
        )
