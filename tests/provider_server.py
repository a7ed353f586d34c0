"""A loopback HTTP server that speaks OpenAI chat completions and Anthropic messages well enough for the
official SDKs, with scripted replies: tool calls, text-only replies, malformed or schema-breaking
arguments, unknown tool names, 429 with Retry-After, 500s, slow replies (time-outs), a served model id
that differs, empty and unfinished replies, and token log-probabilities. Nothing leaves 127.0.0.1.

    with ProviderServer(script, api_key="sk-test-...", latency_s=0.0) as server:
        openai.OpenAI(base_url=server.openai_url, api_key=...)
        anthropic.Anthropic(base_url=server.anthropic_url, api_key=...)

A *script* is a function ``(Seen) -> Reply`` (``Seen`` is the parsed request, with ``attempt``: how many
earlier requests carried the same conversation, tools and tool choice, so a script can fail the first
attempts and then answer). ``oracle(...)`` builds a script from a map of request text -> expected tool.

Quirks of servers nobody here wrote, reproduced on request (``ProviderServer`` options), so tests hold them:

- ``tools_need_choice`` (llama-cpp-python, ``--chat_format chatml-function-calling``): a request that carries
  no ``tool_choice`` is rendered with no tools: the script sees none (``Seen.tools`` empty);
- ``refuse_null_content`` (llama-cpp-python): an assistant message with ``"content": null`` is answered
  HTTP 500 with the pydantic validation error naming ``messages.N.content``, as its server does;
- ``drop_tool_results`` (llama-cpp-python's chatml-function-calling template has no branch for ``role:
  tool``): the results are not rendered, so the prompt tokens it reports grow only by the assistant's call;
- ``functions_text(name)``: the reply ``functions.NAME:`` as text, no tool call (what llama-cpp-python's
  chatml-function-calling returns when it does not parse the model's call).

Multi-turn conversations (an agent loop sends the tool calls it got and their results back): ``Seen.turn``
is how many assistant turns the conversation already holds (0 on the first request), ``Seen.tool_results``
the (content, is_error) results that answered the last one, and ``Seen.calls_so_far`` every earlier call as
(wire name, arguments). ``Reply.extra_calls`` adds parallel calls with their own arguments.
The server also runs as a process for the benchmark:

    python -m tests.provider_server --latency-ms 200      (prints "port <n>", serves until killed)
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Mapping


@dataclass(frozen=True)
class Reply:
    """One scripted reply. Leave everything unset for a plain text reply."""

    tool: str | None = None
    """Wire name of the tool to call (any string: an unknown name is allowed)."""
    arguments: Any = "{}"
    """Tool arguments: JSON text (sent as is, so it may be malformed) or an object."""
    text: str | None = None
    status: int | None = None
    """Reply with this HTTP error status instead."""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    hold: bool = False
    """Answer only when the server stops (a client time-out is then certain, whatever the machine's load)."""
    served_model: str | None = None
    finish: str | None = None
    """Override the finish / stop reason ('length', 'max_tokens', 'content_filter', 'refusal', ...)."""
    logprobs: tuple[tuple[str, float], ...] | None = None
    """(token, probability) alternatives of the first output token (OpenAI-compatible)."""
    empty: bool = False
    """No tool call and no text at all."""
    no_choices: bool = False
    """OpenAI: an empty ``choices`` list."""
    extra_tools: tuple[str, ...] = ()
    """Further tool calls after the first (parallel calls)."""
    extra_calls: tuple[tuple[str, Any], ...] = ()
    """Further (tool, arguments) calls after the first and after ``extra_tools`` (parallel calls)."""
    error_message: str = "scripted error"
    reshape: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """Rewrite the reply's JSON before it is sent with status 200 (shapes real servers send: an error body,
    no usage, no model, content as parts, a legacy function_call, ...)."""
    raw: bytes | None = None
    """Send these bytes with status 200 instead of JSON (e.g. a proxy's HTML page)."""
    content_type: str = "application/json"


def tool_call(tool: str, arguments: Any = "{}", **kwargs: Any) -> Reply:
    return Reply(tool=tool, arguments=arguments, **kwargs)


def text_reply(text: str = "Happy to help! Could you tell me a little more?", **kwargs: Any) -> Reply:
    return Reply(text=text, **kwargs)


def functions_text(name: str, **kwargs: Any) -> Reply:
    """A tool call written as text, as llama-cpp-python's chatml-function-calling hands it back unparsed."""
    return Reply(text=f"functions.{name}:", **kwargs)


def status_reply(status: int, retry_after: float | None = None, **kwargs: Any) -> Reply:
    headers = dict(kwargs.pop("headers", {}))
    if retry_after is not None:
        headers["Retry-After"] = f"{retry_after:g}"
    return Reply(status=status, headers=headers, **kwargs)


@dataclass(frozen=True)
class Seen:
    """A request as the server received it (no credentials: only whether they were right)."""

    api: str
    """'openai' or 'anthropic'."""
    model: str
    system: str
    user_text: str
    messages: tuple[tuple[str, str], ...]
    tools: tuple[str, ...]
    tool_choice: str | None
    """None (auto), 'none', 'required' or the forced tool's wire name."""
    tool_choice_sent: bool
    """The request carried a tool_choice (any, "auto" included)."""
    top_logprobs: int | None
    max_tokens: int | None
    temperature: float | None
    seed: int | None
    anthropic_version: str | None
    authorized: bool
    body: dict[str, Any]
    attempt: int = 0
    turn: int = 0
    """Assistant turns already in the conversation (0: the first request of a run)."""
    tool_results: tuple[tuple[str, bool], ...] = ()
    """(content, is_error) of the tool results that answered the last assistant turn."""
    calls_so_far: tuple[tuple[str, Any], ...] = ()
    """Every earlier tool call of the conversation as (wire name, arguments), oldest first."""

    @property
    def is_router(self) -> bool:
        return self.top_logprobs is not None

    def option_index(self, label: str) -> int | None:
        """The number of option ``label`` in an LLM-router prompt ("3. name: ...")."""
        match = re.search(rf"^(\d+)\. {re.escape(label)}:", self.user_text, re.MULTILINE)
        return int(match.group(1)) if match else None

    @property
    def n_options(self) -> int:
        return len(re.findall(r"^\d+\. ", self.user_text, re.MULTILINE))


Script = Callable[[Seen], Reply]


HOLD_LIMIT_S = 120.0
"""The longest a held reply waits for the server to stop."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024
    """The listen backlog (set before listen(), unlike an attribute set afterwards): with the default of 5,
    32 clients connecting at once lose SYNs and wait a second for the retransmission."""


def first_tool(seen: Seen) -> Reply:
    """The default script: call the first offered tool (text when none is offered); routers answer 1."""
    if seen.is_router:
        return Reply(logprobs=(("1", 0.9), ("2", 0.1)))
    if seen.tools and seen.tool_choice != "none":
        return tool_call(seen.tool_choice if seen.tool_choice not in (None, "required") else seen.tools[0])
    return text_reply()


def oracle(expected: Mapping[str, str], arguments: Mapping[str, Any] | None = None, router_confidence: float = 0.9,
           judge: str = "right") -> Script:
    """Answer every request right: call the expected tool of its text (by wire name; text when 'none' or not
    offered), obey a forced tool_choice, route with ``router_confidence`` on the expected option, and vote
    ``judge`` when asked to judge."""
    arguments = arguments or {}

    def script(seen: Seen) -> Reply:
        if seen.system.startswith("You grade"):
            return text_reply(judge)
        if seen.is_router:
            conversation = seen.user_text.split("\n\nOptions:", 1)[0]
            users = [line[len("user: "):] for line in conversation.splitlines() if line.startswith("user: ")]
            text = users[-1].strip() if users else ""
            label = expected.get(text, "none")
            index = seen.option_index(label) or seen.n_options
            other = 1 if index != 1 else 2
            return Reply(logprobs=((str(index), router_confidence), (str(other), 1 - router_confidence)))
        if seen.tool_choice == "none":
            return text_reply()
        if seen.tool_choice not in (None, "required"):
            return tool_call(seen.tool_choice, arguments.get(seen.tool_choice, "{}"))
        label = expected.get(seen.user_text.strip(), "none")
        if label in seen.tools:
            return tool_call(label, arguments.get(label, "{}"))
        return text_reply()

    return script


def turns_then_text(turns: int) -> Script:
    """An agent conversation of ``turns`` replies: the first offered tool until the last turn, then text."""
    def script(seen: Seen) -> Reply:
        if seen.turn >= turns - 1 or not seen.tools:
            return text_reply("Done.")
        return tool_call(seen.tools[0])
    return script


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class PrefixCache:
    """A model of the servers' prompt-prefix caches, for the prefix-scheduling benchmark and its tests.

    - OpenAI-compatible requests go to one of ``slots`` slots (a llama.cpp server's ``--parallel``), one
      request per slot at a time; each slot keeps the last prompt it evaluated, and a request takes the free
      slot sharing the longest prefix with it. The prompt is the tools, then the messages (chat templates put
      the tools first); the shared prefix is cached, the rest evaluated at ``per_token_s`` a token.
    - Anthropic requests are cached only up to a ``cache_control`` breakpoint on the tool list: the first
      request writes the tools (cache creation), later ones with the same tools read them; any number run
      at once, each taking ``per_token_s`` per uncached token (creation included).

    ``usage`` returns (prompt tokens, cached tokens read, tokens written) and sleeps for the evaluation.
    """

    def __init__(self, slots: int = 1, per_token_s: float = 0.0):
        self.per_token_s = per_token_s
        self._free = threading.Condition()
        self._slots: list[str] = [""] * slots
        self._busy = [False] * slots
        self._written: set[str] = set()
        self._lock = threading.Lock()
        self.tool_block_evaluations = 0
        """OpenAI-compatible requests with tools whose tool block was not in the slot's cache (evaluated again)."""

    @staticmethod
    def _common(a: str, b: str) -> int:
        n = min(len(a), len(b))
        i = 0
        while i < n and a[i] == b[i]:
            i += 1
        return i

    def usage(self, api: str, body: dict[str, Any]) -> tuple[int, int, int]:
        tools = json.dumps(body.get("tools") or [], sort_keys=True)
        rest = json.dumps([body.get("system") or "", body.get("messages") or []], sort_keys=True)
        total = _tokens(tools + rest)
        if api == "anthropic":
            marked = bool(body.get("tools")) and "cache_control" in (body["tools"][-1] or {})
            read = written = 0
            if marked:
                with self._lock:
                    if tools in self._written:
                        read = _tokens(tools)
                    else:
                        written = _tokens(tools)
                        self._written.add(tools)
            time.sleep(self.per_token_s * (total - read))
            return total, read, written
        prompt = tools + rest
        with self._free:
            while all(self._busy):
                self._free.wait()
            free = [i for i, busy in enumerate(self._busy) if not busy]
            slot = max(free, key=lambda i: self._common(self._slots[i], prompt))
            self._busy[slot] = True
            common = self._common(self._slots[slot], prompt) if self._slots[slot] else 0
            cached = min(_tokens(prompt[:common]), total) if self._slots[slot] else 0
            if body.get("tools") and common < len(tools):
                self.tool_block_evaluations += 1
        try:
            time.sleep(self.per_token_s * (total - cached))
        finally:
            with self._free:
                self._slots[slot], self._busy[slot] = prompt, False
                self._free.notify()
        return total, cached, 0


class ProviderServer:
    """The server; a context manager that serves in a background thread on 127.0.0.1."""

    def __init__(self, script: Script = first_tool, api_key: str | None = None, latency_s: float = 0.0,
                 port: int = 0, record: bool = True, prefix_cache: PrefixCache | None = None,
                 tools_need_choice: bool = False, refuse_null_content: bool = False,
                 drop_tool_results: bool = False):
        self.script, self.api_key, self.latency_s, self.record = script, api_key, latency_s, record
        self.tools_need_choice = tools_need_choice
        """llama-cpp-python's quirk: without tool_choice in the request, the prompt holds no tools."""
        self.refuse_null_content = refuse_null_content
        """llama-cpp-python's quirk: an assistant message with content null is an HTTP 500."""
        self.drop_tool_results = drop_tool_results
        """llama-cpp-python's chatml-function-calling template: ``role: tool`` messages are not rendered, so the
        prompt (and its token count) never holds the tool results."""
        self.prefix_cache = prefix_cache
        """When set, replies take the time and report the cached tokens its model of a prefix cache gives."""
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._attempts: dict[str, int] = {}
        self._httpd = _Server(("127.0.0.1", port), self._handler_class())
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        """Set when the server stops: releases the replies that ``hold``."""

    # -- addresses ----------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "ProviderServer":
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def requests(self, api: str | None = None, router: bool | None = None) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if (api is None or s.api == api) and (router is None or s.is_router == router)]

    # -- parsing ------------------------------------------------------------------------------------------
    def _authorized(self, headers: Mapping[str, str], api: str) -> bool:
        if self.api_key is None:
            return True
        bearer = headers.get("Authorization", "")
        if bearer == f"Bearer {self.api_key}":
            return True
        return api == "anthropic" and headers.get("x-api-key") == self.api_key

    @staticmethod
    def conversation_state(api: str, body: dict[str, Any]) -> tuple[int, tuple[tuple[str, bool], ...],
                                                                   tuple[tuple[str, Any], ...]]:
        """(assistant turns, results of the last one, every earlier call) of a multi-turn request."""
        turns, results, calls = 0, [], []
        for message in body.get("messages", []):
            role, content = message.get("role"), message.get("content")
            if role == "assistant":
                turns += 1
                results = []
                for call in message.get("tool_calls") or []:
                    function = call.get("function") or {}
                    calls.append((function.get("name"), function.get("arguments")))
                for block in content if isinstance(content, list) else []:
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        calls.append((block.get("name"), block.get("input")))
            elif role == "tool":
                results.append((content if isinstance(content, str) else json.dumps(content), False))
            elif role == "user" and isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        inner = block.get("content")
                        text = inner if isinstance(inner, str) else "".join(
                            b.get("text", "") for b in inner or [] if isinstance(b, dict))
                        results.append((text, bool(block.get("is_error"))))
        if api == "openai":  # OpenAI's tool messages carry no error flag: the content says it
            results = [(text, text.startswith('{"error"')) for text, _ in results]
        return turns, tuple(results), tuple(calls)

    def parse(self, api: str, body: dict[str, Any], headers: Mapping[str, str]) -> Seen:
        messages: list[tuple[str, str]] = []
        system = ""
        for message in body.get("messages", []):
            content = message.get("content")
            if isinstance(content, list):
                if message.get("role") == "user" and content and all(
                        isinstance(p, dict) and p.get("type") == "tool_result" for p in content):
                    continue  # tool results, not something the user said
                content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
            content = content or ""
            if message.get("role") == "system" and not system:
                system = content
                continue
            messages.append((message.get("role", ""), content))
        if api == "anthropic":
            raw_system = body.get("system") or ""
            system = raw_system if isinstance(raw_system, str) else "".join(b.get("text", "") for b in raw_system)
            tools = tuple(t["name"] for t in body.get("tools", []))
            choice = body.get("tool_choice") or {}
            tool_choice = {"auto": None, "none": "none", "any": "required"}.get(choice.get("type"), choice.get("name"))
            max_tokens = body.get("max_tokens")
        else:
            tools = tuple(t["function"]["name"] for t in body.get("tools", []))
            choice = body.get("tool_choice")
            if isinstance(choice, dict):
                tool_choice = choice.get("function", {}).get("name")
            else:
                tool_choice = None if choice in (None, "auto") else choice
            max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
        sent = "tool_choice" in body
        if self.tools_need_choice and not sent:
            tools = ()  # rendered without tools: the model never sees them
        user_text = next((c for r, c in reversed(messages) if r == "user"), "")
        top = body.get("top_logprobs") if body.get("logprobs") else None
        key = json.dumps([api, body.get("model"), messages, tools, tool_choice, top], sort_keys=True)
        turn, results, calls = self.conversation_state(api, body)
        if turn:  # a multi-turn request: earlier calls and results make it a different request
            key = json.dumps([key, json.dumps(body.get("messages"), sort_keys=True, default=str)])
        with self._lock:
            attempt = self._attempts.get(key, 0)
            self._attempts[key] = attempt + 1
        return Seen(api=api, model=body.get("model", ""), system=system, user_text=user_text,
                    messages=tuple(messages), tools=tools, tool_choice=tool_choice, tool_choice_sent=sent,
                    top_logprobs=top,
                    max_tokens=max_tokens, temperature=body.get("temperature"), seed=body.get("seed"),
                    anthropic_version=headers.get("anthropic-version"), authorized=self._authorized(headers, api),
                    body=body, attempt=attempt, turn=turn, tool_results=results, calls_so_far=calls)

    # -- replies ------------------------------------------------------------------------------------------
    @staticmethod
    def _arguments_text(arguments: Any) -> str:
        return arguments if isinstance(arguments, str) else json.dumps(arguments)

    def openai_body(self, seen: Seen, reply: Reply) -> dict[str, Any]:
        model = reply.served_model or seen.model
        rendered = seen.body if not self.drop_tool_results else {
            **seen.body, "messages": [m for m in seen.body.get("messages", []) if m.get("role") != "tool"]}
        prompt_tokens = _tokens(json.dumps(rendered))
        message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
        finish = "stop"
        if reply.tool is not None:
            calls = [(reply.tool, reply.arguments), *((name, "{}") for name in reply.extra_tools), *reply.extra_calls]
            prefix = f"call_{seen.turn}_" if seen.turn else "call_"
            message["tool_calls"] = [
                {"id": f"{prefix}{i}", "type": "function",
                 "function": {"name": name, "arguments": self._arguments_text(arguments)}}
                for i, (name, arguments) in enumerate(calls)
            ]
            finish = "tool_calls"
        elif reply.logprobs is not None:
            message["content"] = reply.logprobs[0][0]
        elif not reply.empty:
            message["content"] = reply.text if reply.text is not None else "Happy to help!"
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": reply.finish or finish,
                                  "logprobs": None}
        if reply.logprobs is not None:
            alternatives = [{"token": token, "logprob": math.log(p) if p > 0 else -9999.0,
                             "bytes": list(token.encode())} for token, p in reply.logprobs]
            choice["logprobs"] = {"content": [{**alternatives[0], "top_logprobs": alternatives[: seen.top_logprobs or 1]}],
                                  "refusal": None}
        # a server that renders its own replies (llama-cpp-python) counts the call it wrote as it renders it back
        completion = _tokens(json.dumps({**message, "content": ""})) if self.drop_tool_results else 12
        return {"id": "chatcmpl-loopback", "object": "chat.completion", "created": int(time.time()), "model": model,
                "choices": [] if reply.no_choices else [choice], "system_fingerprint": "fp_loopback",
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                          "total_tokens": prompt_tokens + completion,
                          "prompt_tokens_details": {"cached_tokens": 0}}}

    def anthropic_body(self, seen: Seen, reply: Reply) -> dict[str, Any]:
        model = reply.served_model or seen.model
        content: list[dict[str, Any]] = []
        stop = "end_turn"
        if reply.text is not None and reply.tool is not None:
            content.append({"type": "text", "text": reply.text})
        if reply.tool is not None:
            calls = [(reply.tool, reply.arguments), *((name, {}) for name in reply.extra_tools), *reply.extra_calls]
            prefix = f"toolu_{seen.turn}_" if seen.turn else "toolu_"
            for i, (name, arguments) in enumerate(calls):
                if isinstance(arguments, str):
                    try:
                        arguments = json.loads(arguments)
                    except json.JSONDecodeError:
                        pass  # sent as a string: what a broken proxy might do
                content.append({"type": "tool_use", "id": f"{prefix}{i}", "name": name, "input": arguments})
            stop = "tool_use"
        elif not reply.empty:
            content.append({"type": "text", "text": reply.text if reply.text is not None else "Happy to help!"})
        return {"id": "msg_loopback", "type": "message", "role": "assistant", "model": model, "content": content,
                "stop_reason": reply.finish or stop, "stop_sequence": None,
                "usage": {"input_tokens": _tokens(json.dumps(seen.body)), "output_tokens": 12,
                          "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}

    def cached_usage(self, api: str, body: dict[str, Any], payload: dict[str, Any]) -> None:
        """Evaluate the prompt under the prefix-cache model (taking its time) and report its tokens."""
        assert self.prefix_cache is not None
        total, read, written = self.prefix_cache.usage(api, body)
        usage = payload["usage"]
        if api == "openai":
            usage.update(prompt_tokens=total, total_tokens=total + usage["completion_tokens"],
                         prompt_tokens_details={"cached_tokens": read})
        else:
            usage.update(input_tokens=total - read - written, cache_read_input_tokens=read,
                         cache_creation_input_tokens=written)

    def refuse_message(self, api: str, body: dict[str, Any]) -> str | None:
        """llama-cpp-python's answer to an assistant message with content null (``refuse_null_content``): its
        pydantic validation error, which its server sends with HTTP 500 as an internal_server_error."""
        if not self.refuse_null_content or api != "openai":
            return None
        for i, message in enumerate(body.get("messages") or []):
            if message.get("role") == "assistant" and "content" in message and message["content"] is None:
                return (f"1 validation error for CreateChatCompletionRequest\nmessages.{i}.typed-dict.content\n"
                        "  Input should be a valid string [type=string_type, input_value=None, input_type=NoneType]")
        return None

    @staticmethod
    def refuse_schema(api: str, body: dict[str, Any]) -> str | None:
        """The 400 the real services give a tool schema with a combinator at its root (or no object type)."""
        for i, tool in enumerate(body.get("tools") or []):
            if api == "openai":
                schema, name = tool.get("function", {}).get("parameters") or {}, tool.get("function", {}).get("name")
                if schema.get("type") != "object" or any(k in schema for k in ("oneOf", "anyOf", "allOf", "enum",
                                                                               "const", "not")):
                    return (f"Invalid schema for function '{name}': schema must have type 'object' and not have "
                            "'oneOf'/'anyOf'/'allOf'/'enum'/'const'/'not' at the top level.")
            else:
                schema = tool.get("input_schema") or {}
                if any(k in schema for k in ("oneOf", "anyOf", "allOf")):
                    return f"tools.{i}.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level"
        return None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

            def log_message(self, *args: Any) -> None:  # quiet
                return

            def _send(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
                self._send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

            def _send_bytes(self, status: int, data: bytes, content_type: str,
                            headers: Mapping[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

            def do_GET(self) -> None:  # noqa: N802
                self._send(200, {"object": "list", "data": []})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?")[0].rstrip("/")
                if path.endswith("/chat/completions"):
                    api = "openai"
                elif path.endswith("/messages"):
                    api = "anthropic"
                else:
                    self._send(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
                    return
                seen = server.parse(api, body, self.headers)
                if server.record:
                    with server._lock:
                        server.seen.append(seen)
                if not seen.authorized:
                    presented = (self.headers.get("Authorization", "").removeprefix("Bearer ")
                                 or self.headers.get("x-api-key", ""))
                    # like the real services, the message echoes the key presented: clients must scrub it
                    self._error(api, 401, f"Incorrect API key provided: {presented}", "authentication_error", {})
                    return
                refused_message = server.refuse_message(api, body)
                if refused_message:
                    self._error(api, 500, refused_message, "internal_server_error", {})
                    return
                refusal = server.refuse_schema(api, body)
                if refusal:
                    self._error(api, 400, refusal, "invalid_request_error", {})
                    return
                reply = server.script(seen)
                if reply.hold:
                    server._stopping.wait(HOLD_LIMIT_S)
                delay = server.latency_s + reply.delay_s
                if delay:
                    time.sleep(delay)
                if reply.status is not None:
                    self._error(api, reply.status, reply.error_message,
                                "rate_limit_error" if reply.status == 429 else "api_error", reply.headers)
                    return
                if reply.raw is not None:
                    self._send_bytes(200, reply.raw, reply.content_type, reply.headers)
                    return
                payload = server.openai_body(seen, reply) if api == "openai" else server.anthropic_body(seen, reply)
                if server.prefix_cache is not None:
                    server.cached_usage(api, body, payload)
                if reply.reshape is not None:
                    payload = reply.reshape(payload)
                self._send(200, payload, reply.headers)

            def _error(self, api: str, status: int, message: str, kind: str, headers: Mapping[str, str]) -> None:
                if api == "openai":
                    payload = {"error": {"message": message, "type": kind, "param": None, "code": None}}
                else:
                    payload = {"type": "error", "error": {"type": kind, "message": message}}
                self._send(status, payload, headers)

        return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the loopback OpenAI/Anthropic API (first offered tool).")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--turns", type=int, default=1,
                        help="agent conversations: call the first offered tool on the first TURNS-1 turns, then reply "
                             "in text (default 1: every request calls the first offered tool)")
    args = parser.parse_args(argv)
    script = first_tool if args.turns <= 1 else turns_then_text(args.turns)
    return serve_until_killed(ProviderServer(script, latency_s=args.latency_ms / 1000, port=args.port, record=False))


def serve_until_killed(server: ProviderServer) -> int:
    """Print "port <n>" and serve in this thread until the process is killed (or interrupted)."""
    print(f"port {server.port}", flush=True)
    try:
        server._httpd.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
