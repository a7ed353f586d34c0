"""OpenAI chat completions with tools, through the official ``openai`` SDK.

``base_url`` makes the same provider talk to any OpenAI-compatible server (vLLM, Ollama, llama.cpp's
server, a proxy). Sampling: ``temperature`` (default 0; ``null`` leaves it out, for models that refuse
it) and the provider's ``seed`` (``provider_seed``, default 0). The SDK's own retries are off: the retry
policy of ``chat_selector`` counts every retry on its row. The API key is passed to the client and kept
nowhere else.
"""

from __future__ import annotations

from typing import Any, Mapping

from tasks.selectors.providers.chat_types import ChatReply, ChatRequest
from tasks.selectors.providers.reply_body import reply_json
from tasks.selectors.providers.sdk_clients import shared_client

DEFAULT_BASE_URL = "https://api.openai.com/v1"
UNFINISHED = {"length", "content_filter"}


def content_text(content: Any) -> str:
    """A message's text: a string, or a list of parts whose text parts are joined (others are skipped)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "".join(texts)
    return str(content)


class OpenAIChat:
    """The OpenAI side of ``ChatProvider``."""

    provider = "openai"

    def __init__(self, api_key: str, base_url: str, options: Mapping[str, Any]):
        import httpx2
        import openai

        self._response_type = httpx2.Response
        """What ``complete`` asks the SDK for: the HTTP response as it came (the SDK's HTTP library's type)."""
        self.endpoint = base_url
        self.options = dict(options)
        self._client = shared_client("openai", base_url, api_key, (),
                                     lambda: openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=0))

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` (no secrets: the key is on the client)."""
        options = self.options
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages += [{"role": role, "content": content} for role, content in request.messages]
        # The conversation and the tools go in ``extra_body``, which the SDK merges over the typed fields
        # as is, so its typed-params transform does not walk every message and JSON schema of each call.
        body: dict[str, Any] = {"model": request.model, "messages": []}
        extra: dict[str, Any] = {"messages": messages}
        if request.tools:
            tools: dict[str, Any] = {"tools": [
                {"type": "function", "function": {"name": t.name, "description": t.description,
                                                  "parameters": t.parameters}}
                for t in request.tools
            ]}
            if request.tool_choice in ("auto", "none", "required"):
                tools["tool_choice"] = request.tool_choice
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
        # ``client.post`` to the completions path sends the body as is: the SDK still authenticates, sends and
        # raises its errors, but builds no typed models of the reply, which is read as JSON. The body is
        # ``request_body``'s with ``extra_body`` merged over it, as ``create`` merges it.
        body = self.request_body(request)
        body.update(body.pop("extra_body"))
        response = self._client.post("/chat/completions", body=body, cast_to=self._response_type,
                                     options={"timeout": timeout_s})
        return self.read_reply(reply_json(response.content, response.headers.get("content-type"), self.provider))

    @staticmethod
    def read_reply(data: Mapping[str, Any]) -> ChatReply:
        """A ChatReply from the JSON of a chat completion (``reply_json`` has refused error bodies).

        Shapes read besides the documented one: ``content`` as a list of parts (their text joined), a legacy
        ``function_call`` in place of ``tool_calls``, a call whose ``name`` is missing or null (kept as a
        ``call_problem``: invalid), no ``usage`` (tokens unknown: the cost is NULL, not 0)."""
        usage = data.get("usage") or {}
        details = usage.get("prompt_tokens_details") or {}
        base = {"served_model": data.get("model") or None, "input_tokens": usage.get("prompt_tokens"),
                "output_tokens": usage.get("completion_tokens"), "cached_input_tokens": details.get("cached_tokens")}
        choices = data.get("choices") or []
        if not choices:
            return ChatReply(tool_name=None, stop_reason=None, **base)
        choice = choices[0]
        message = choice.get("message") or {}
        calls = list(message.get("tool_calls") or [])
        if not calls and isinstance(message.get("function_call"), Mapping):  # the legacy (pre-tools) shape
            calls = [{"type": "function", "function": message["function_call"]}]
        function = (calls[0].get("function") or {}) if calls else {}
        name = function.get("name") if calls else None
        problem = None
        if calls and (not isinstance(name, str) or not name.strip()):
            problem, name = "a tool call without a tool name", None
        top: tuple[tuple[str, float], ...] | None = None
        content_logprobs = (choice.get("logprobs") or {}).get("content") or []
        if content_logprobs:
            first = content_logprobs[0]
            alternatives = first.get("top_logprobs") or [first]
            top = tuple((alt["token"], float(alt["logprob"])) for alt in alternatives)
        finish = choice.get("finish_reason")
        return ChatReply(
            tool_name=name,
            arguments=function.get("arguments") if calls else None,
            text=content_text(message.get("content")),
            stop_reason=finish,
            n_tool_calls=len(calls),
            call_problem=problem,
            top_logprobs=top,
            unfinished=finish in UNFINISHED,
            refusal=message.get("refusal"),
            **base,
        )
