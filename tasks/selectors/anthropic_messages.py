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
        response = self._client.messages.create(**self.request_body(request), timeout=timeout_s)
        return self.read_reply(response)

    @staticmethod
    def read_reply(response: Any) -> ChatReply:
        usage = getattr(response, "usage", None)
        fresh = getattr(usage, "input_tokens", None) if usage else None
        cache_read = (getattr(usage, "cache_read_input_tokens", None) or 0) if usage else 0
        cache_write = (getattr(usage, "cache_creation_input_tokens", None) or 0) if usage else 0
        input_tokens = None if fresh is None else fresh + cache_read + cache_write
        blocks = list(getattr(response, "content", None) or [])
        uses = [b for b in blocks if getattr(b, "type", None) == "tool_use"]
        text = "".join(getattr(b, "text", "") or "" for b in blocks if getattr(b, "type", None) == "text")
        first = uses[0] if uses else None
        stop = getattr(response, "stop_reason", None)
        return ChatReply(
            served_model=getattr(response, "model", None),
            tool_name=getattr(first, "name", None) if first is not None else None,
            arguments=getattr(first, "input", None) if first is not None else None,
            text=text,
            stop_reason=stop,
            input_tokens=input_tokens,
            output_tokens=getattr(usage, "output_tokens", None) if usage else None,
            cached_input_tokens=cache_read,
            n_tool_calls=len(uses),
            unfinished=stop in UNFINISHED,
            refusal=text if stop == "refusal" else None,
        )
