"""OpenAI chat completions with tools, through the official ``openai`` SDK.

``base_url`` makes the same provider talk to any OpenAI-compatible server (vLLM, Ollama, llama.cpp's
server, a proxy). Sampling: ``temperature`` (default 0; ``null`` leaves it out, for models that refuse
it) and the provider's ``seed`` (``provider_seed``, default 0). The SDK's own retries are off: the retry
policy of ``chat_selector`` counts every retry on its row. The API key is passed to the client and kept
nowhere else.
"""

from __future__ import annotations

from typing import Any, Mapping

from tasks.selectors.chat_types import ChatReply, ChatRequest

DEFAULT_BASE_URL = "https://api.openai.com/v1"
UNFINISHED = {"length", "content_filter"}


class OpenAIChat:
    """The OpenAI side of ``ChatProvider``."""

    provider = "openai"

    def __init__(self, api_key: str, base_url: str, options: Mapping[str, Any]):
        import openai

        self.endpoint = base_url
        self.options = dict(options)
        self._client = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=0)

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` (no secrets: the key is on the client)."""
        options = self.options
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages += [{"role": role, "content": content} for role, content in request.messages]
        # The conversation and the tools go in ``extra_body``, which the SDK merges over the typed fields
        # as is (its documented way to send fields verbatim): its typed-params transform walks every node of
        # every message and JSON schema (~10 ms CPU a call with 30 tools, ~2 ms for the messages alone), a
        # ceiling on calls per second on a small machine. The JSON on the wire is the same.
        body: dict[str, Any] = {"model": request.model, "messages": []}
        extra: dict[str, Any] = {"messages": messages}
        if request.tools:
            tools: dict[str, Any] = {"tools": [
                {"type": "function", "function": {"name": t.name, "description": t.description,
                                                  "parameters": t.parameters}}
                for t in request.tools
            ]}
            if request.tool_choice == "none":
                tools["tool_choice"] = "none"
            elif request.tool_choice == "required":
                tools["tool_choice"] = "required"
            elif request.tool_choice is not None:
                tools["tool_choice"] = {"type": "function", "function": {"name": request.tool_choice}}
            if options.get("parallel_tool_calls") is not None:
                tools["parallel_tool_calls"] = bool(options["parallel_tool_calls"])
            extra.update(tools)
        body["extra_body"] = extra
        if options.get("temperature") is not None:
            body["temperature"] = float(options["temperature"])
        if options.get("provider_seed") is not None:
            body["seed"] = int(options["provider_seed"]) + request.vote_seed
        if options.get("reasoning_effort") is not None:
            body["reasoning_effort"] = options["reasoning_effort"]
        key = "max_tokens" if options.get("legacy_max_tokens") else "max_completion_tokens"
        body[key] = request.max_tokens
        if request.top_logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = request.top_logprobs
        return body

    def complete(self, request: ChatRequest, timeout_s: float) -> ChatReply:
        response = self._client.chat.completions.create(**self.request_body(request), timeout=timeout_s)
        return self.read_reply(response)

    @staticmethod
    def read_reply(response: Any) -> ChatReply:
        usage = getattr(response, "usage", None)
        input_tokens = getattr(usage, "prompt_tokens", None) if usage else None
        output_tokens = getattr(usage, "completion_tokens", None) if usage else None
        details = getattr(usage, "prompt_tokens_details", None) if usage else None
        cached = getattr(details, "cached_tokens", None) if details else None
        choices = getattr(response, "choices", None) or []
        if not choices:
            return ChatReply(served_model=getattr(response, "model", None), tool_name=None, stop_reason=None,
                             input_tokens=input_tokens, output_tokens=output_tokens, cached_input_tokens=cached)
        choice = choices[0]
        message = choice.message
        calls = list(getattr(message, "tool_calls", None) or [])
        first = calls[0] if calls else None
        function = getattr(first, "function", None) if first is not None else None
        top: tuple[tuple[str, float], ...] | None = None
        logprobs = getattr(choice, "logprobs", None)
        content_logprobs = getattr(logprobs, "content", None) if logprobs else None
        if content_logprobs:
            alternatives = content_logprobs[0].top_logprobs or []
            top = tuple((alt.token, float(alt.logprob)) for alt in alternatives)
            if not top:
                top = ((content_logprobs[0].token, float(content_logprobs[0].logprob)),)
        return ChatReply(
            served_model=getattr(response, "model", None),
            tool_name=getattr(function, "name", None) if function is not None else None,
            arguments=getattr(function, "arguments", None) if function is not None else None,
            text=message.content or "",
            stop_reason=choice.finish_reason,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_input_tokens=cached,
            n_tool_calls=len(calls),
            top_logprobs=top,
            unfinished=choice.finish_reason in UNFINISHED,
            refusal=getattr(message, "refusal", None),
        )
