"""One guarded provider call: halt and budget checks, the endpoint's concurrency bound, retries, cost, and
the served-model check. Never raises for a failed call: the result says what happened, with a detail
that carries no secret.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from tasks.selectors.providers.call_budget import BUDGET_REACHED, RunLedger, Turn
from tasks.selectors.providers.chat_options import (DEFAULT_CONCURRENCY, key_source, provider_defaults,
                                                     read_api_key, resolve_base_url)
from tasks.selectors.providers.chat_types import ChatProvider, ChatReply, ChatRequest
from tasks.selectors.providers.pinned_models import served_problem
from tasks.selectors.providers.pricing import ModelPrice, price_for
from tasks.selectors.providers.retry_policy import Failure, RetryPolicy, classify, error_message, gate_for
from tasks.selectors.providers.openai_chat import OpenAIChat
from tasks.selectors.providers.anthropic_messages import AnthropicMessages

_KEY_LIKE = re.compile(r"\b(sk|pk|key|token)[-_][A-Za-z0-9_\-*]{6,}", re.IGNORECASE)
CHARS_PER_TOKEN_BOUND = 3
"""Prompt characters per token assumed by the spend estimate (English runs ~4: 3 overestimates)."""


def scrub(text: str, secrets: tuple[str, ...]) -> str:
    """Remove secrets (and anything shaped like a key) from a message meant for a row or a log."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
            if len(secret) > 8:
                text = text.replace(secret[-8:], "[redacted]")
    return _KEY_LIKE.sub("[redacted]", text)


@dataclass(frozen=True)
class CallResult:
    reply: ChatReply | None
    detail: str | None = None
    """Why the call failed, was not sent, or was served by the wrong model (None when all went well)."""
    retries: int = 0
    """HTTP requests sent after the first (the call's attempts are ``retries + 1`` when it was sent)."""
    latency_ms: float = 0.0
    cost_usd: float | None = None
    sent: bool = True
    """False when no request left: budget reached or the model was halted."""

    @property
    def ok(self) -> bool:
        return self.reply is not None and self.detail is None


ADAPTERS: dict[str, Callable[[str, str, Mapping[str, Any]], ChatProvider]] = {
    "openai": OpenAIChat, "anthropic": AnthropicMessages}
"""Provider kind -> its adapter (api key, base URL, options): one turn, the first tool call read."""


def make_provider(kind: str, options: Mapping[str, Any], api_key: str,
                  adapters: Mapping[str, Callable[[str, str, Mapping[str, Any]], ChatProvider]] = ADAPTERS
                  ) -> ChatProvider:
    if kind not in adapters:
        raise ValueError(f"unknown provider {kind}")
    return adapters[kind](api_key, resolve_base_url(kind, options), options)


class ProviderCaller:
    """Calls one pinned model at one endpoint under the arm's retry policy and concurrency bound."""

    adapters = ADAPTERS
    """The SDK adapters it builds its provider from (a conversation-speaking caller names its own)."""

    def __init__(self, kind: str, model_id: str, options: Mapping[str, Any],
                 sleep: Callable[[float], None] = time.sleep):
        self.kind, self.model_id, self.options = kind, model_id, provider_defaults(kind, options)
        self.endpoint = self.options["base_url"]
        self.policy = RetryPolicy.from_options(self.options)
        self.price: ModelPrice = price_for(model_id, self.options)
        self.gate = gate_for(kind, self.endpoint, int(self.options.get("concurrency", DEFAULT_CONCURRENCY)))
        self._sleep = sleep
        self._provider: ChatProvider | None = None
        self._provider_lock = threading.Lock()
        self._key: str | None = None

    @property
    def halt_key(self) -> str:
        return f"{self.kind}:{self.model_id}@{self.endpoint}"

    def provider(self) -> ChatProvider | None:
        """The provider adapter, built once (under a lock: the first batch's threads all ask at once); its SDK
        client is the process's one for the endpoint and key (``sdk_clients``: building one loads the CA
        bundle and opens a connection pool)."""
        if self._provider is None:
            with self._provider_lock:
                if self._provider is None:
                    self._key = read_api_key(self.kind, self.options)
                    if self._key is None:
                        return None
                    self._provider = make_provider(self.kind, self.options, self._key, self.adapters)
        return self._provider

    def estimate_usd(self, request: ChatRequest, price: ModelPrice | None = None) -> float:
        """An upper bound on the request's cost at ``price`` (default: the model's call price)."""
        return (price or self.price).cost(request.prompt_chars // CHARS_PER_TOKEN_BOUND + 1, request.max_tokens)

    def checked(self, reply: ChatReply, ledger: RunLedger,
                price: ModelPrice | None = None) -> tuple[float | None, str | None]:
        """The reply's cost at ``price`` (default: the call price; None when it gave no token counts), and the
        served-model check: a served model other than the pin halts this model for the rest of the run."""
        cost = (price or self.price).cost_or_none(reply.input_tokens, reply.output_tokens, reply.cached_input_tokens,
                                                  reply.cache_write_tokens, reply.cache_write_1h_tokens)
        mismatch = served_problem(self.model_id, reply.served_model, self.options)
        if mismatch:
            ledger.halt(self.halt_key, mismatch)
        return cost, mismatch

    def _failure_detail(self, failure: Failure, error: BaseException, retries: int) -> str:
        message = error_message(error) or (str(error) if getattr(error, "status_code", None) is None else "")
        text = failure.detail + (f": {message}" if message else "")
        if failure.retryable and retries:
            text = f"{text} (after {retries} retries)"
        elif failure.retry_after_s is not None and failure.retry_after_s > self.policy.max_retry_after_s:
            text = f"{text}: Retry-After {failure.retry_after_s:.0f} s exceeds max_retry_after_s"
        return scrub(text, (self._key or "",))[:400]

    def unsendable(self, ledger: RunLedger) -> str | None:
        """Why nothing may be sent now (the model halted in this run, or no API key), else None."""
        halted = ledger.halted(self.halt_key)
        if halted:
            return f"not sent: {halted}"
        if self.provider() is None:
            return f"not sent: no API key in {key_source(self.kind, self.options)}"
        return None

    def call(self, request: ChatRequest, ledger: RunLedger, turn: Turn | None = None) -> CallResult:
        """One call with its retries. Inside a ``turn`` (reserved whole by the caller) the call only reports its
        cost to the turn; alone, it reserves and settles itself."""
        unsendable = self.unsendable(ledger)
        if unsendable:
            return CallResult(None, unsendable, sent=False)
        provider = self.provider()
        assert provider is not None  # unsendable said so otherwise
        reservation = None
        if turn is None:
            reservation = ledger.reserve(self.estimate_usd(request))
            if reservation is None:
                return CallResult(None, BUDGET_REACHED, sent=False)
        retries, elapsed, cost, unknown = 0, 0.0, None, False
        try:
            while True:
                with self.gate:
                    self.gate.wait_if_paused()
                    started = time.perf_counter()
                    try:
                        reply = provider.complete(request, timeout_s=self.policy.timeout_s)
                        error = None
                    except Exception as caught:  # the SDKs' errors, and anything else: a row, not a crash
                        reply, error = None, caught
                    elapsed += time.perf_counter() - started
                if error is None:
                    break
                failure = classify(error)
                wait = self.policy.wait_s(failure, retries)
                if wait is None:
                    return CallResult(None, self._failure_detail(failure, error, retries), retries, elapsed * 1000)
                if not ledger.reserve_retry():  # max_calls bounds retries too: the row ends here, uncached
                    return CallResult(None, BUDGET_REACHED, retries, elapsed * 1000)
                if failure.retry_after_s is not None:
                    self.gate.pause(wait)
                self._sleep(wait)
                elapsed += wait
                retries += 1
            assert reply is not None
            cost, mismatch = self.checked(reply, ledger)
            unknown = cost is None
            return CallResult(reply, mismatch, retries, elapsed * 1000, cost)
        finally:
            if reservation is not None:
                ledger.settle(reservation, cost, unknown_cost_calls=int(unknown))
            else:
                turn.add(cost, retries, unknown)
