"""Anthropic messages with tools, through the official ``anthropic`` SDK.

The SDK (2.x) speaks API version 2026-10-21, which refuses every sampling parameter (temperature, top_p,
top_k) on every model; Anthropic has no seed. So by default nothing is sent for sampling and the arm's
answers are as repeatable as the model makes them (the seeds' spread shows how much). An arm that must
set a temperature states ``api_version: "2023-06-01"`` with it; the temperature then goes in the body
(``extra_body``, as the SDK's migration guide says) under that version.

The agent prompt and any system turns of the conversation go in ``system``; the first ``tool_use``
block of the reply is the choice.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from tasks.selectors.chat_types import ChatReply, ChatRequest

DEFAULT_BASE_URL = "https://api.anthropic.com"
SAMPLING_API_VERSION = "2023-06-01"
UNFINISHED = {"max_tokens", "model_context_window_exceeded", "pause_turn", "refusal"}


class AnthropicMessages:
    """The Anthropic side of ``ChatProvider``."""

    provider = "anthropic"

    def __init__(self, api_key: str, base_url: str, options: Mapping[str, Any]):
        import anthropic

        self.endpoint = base_url
        self.options = dict(options)
        headers = {"anthropic-version": str(options["api_version"])} if options.get("api_version") else None
        self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url, max_retries=0,
                                           default_headers=headers)

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
            if request.tool_choice == "none":
                extra["tool_choice"] = {"type": "none"}
            elif request.tool_choice == "required":
                extra["tool_choice"] = {"type": "any"}
            elif request.tool_choice is not None:
                extra["tool_choice"] = {"type": "tool", "name": request.tool_choice}
        if self.options.get("temperature") is not None:
            extra["temperature"] = float(self.options["temperature"])
        body["extra_body"] = extra
        return body

    def complete(self, request: ChatRequest, timeout_s: float) -> ChatReply:
        # the raw response, read as JSON (see openai_chat): the SDK still sends, authenticates and raises
        raw = self._client.messages.with_raw_response.create(**self.request_body(request), timeout=timeout_s)
        return self.read_reply(json.loads(raw.http_response.content))

    @staticmethod
    def read_reply(data: Mapping[str, Any]) -> ChatReply:
        """A ChatReply from the JSON of a message."""
        usage = data.get("usage") or {}
        fresh = usage.get("input_tokens")
        cache_read = usage.get("cache_read_input_tokens") or 0
        cache_write = usage.get("cache_creation_input_tokens") or 0
        blocks = list(data.get("content") or [])
        uses = [b for b in blocks if b.get("type") == "tool_use"]
        text = "".join(b.get("text") or "" for b in blocks if b.get("type") == "text")
        first = uses[0] if uses else None
        stop = data.get("stop_reason")
        return ChatReply(
            served_model=data.get("model"),
            tool_name=first.get("name") if first else None,
            arguments=first.get("input") if first else None,
            text=text,
            stop_reason=stop,
            input_tokens=None if fresh is None else fresh + cache_read + cache_write,
            output_tokens=usage.get("output_tokens"),
            cached_input_tokens=cache_read,
            n_tool_calls=len(uses),
            unfinished=stop in UNFINISHED,
            refusal=text if stop == "refusal" else None,
        )
