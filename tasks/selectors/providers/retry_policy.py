"""Retries and bounded concurrency for provider calls.

- ``RetryPolicy``: which failures are retried (429, 5xx, 408/409, timeouts, dropped connections) and how
  long to wait: exponential backoff with full jitter, or — on a 429 or 503 that says so — the server's
  ``Retry-After`` / ``retry-after-ms`` (plus a little jitter so waiting threads do not return together).
  A Retry-After longer than ``max_retry_after_s`` is not waited out: the call fails with that reason.
- ``ProviderGate``: one per provider endpoint and process: a semaphore bounding the calls in flight, and a
  shared pause that a 429's Retry-After sets for every caller of that endpoint, not only the one that was
  told.

A failure that blames the request is never retried, for the selectors and the task agents alike (both call
through ``provider_calls.ProviderCaller``): every 4xx but 408 / 409 / 429, an HTTP 200 whose error body says
the request is wrong, and a 5xx whose body is a validation error of the request (``blames_request``:
llama-cpp-python answers a request its schema refuses, e.g. an assistant message with ``"content": null``,
with HTTP 500 and the pydantic error naming ``messages.2.content``): sending it again fails the same way.

The SDKs' own retries are turned off (``max_retries=0``) so that every retry is counted on its row.
"""

from __future__ import annotations

import email.utils
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Mapping

from tasks.selectors.providers.reply_body import BodyNotJSON, ErrorInBody

RETRIED_STATUS = frozenset({408, 409, 429})

_VALIDATION_ERROR = re.compile(r"validation error", re.IGNORECASE)
_REQUEST_FIELD = re.compile(r"\b(messages|tools|tool_choice|body)\b")
"""A validation error (pydantic / FastAPI wording) that names a field of the request body."""


def error_message(error: BaseException) -> str:
    """The provider's error message from an SDK exception's parsed body ("" when it has none)."""
    body = getattr(error, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and inner.get("message"):
            return str(inner["message"])
        if body.get("message"):
            return str(body["message"])
    return ""


def blames_request(message: str) -> bool:
    """A server error whose message is a validation error of the request itself (not retried)."""
    return bool(_VALIDATION_ERROR.search(message) and _REQUEST_FIELD.search(message))


@dataclass(frozen=True)
class Failure:
    """A failed attempt, classified."""

    retryable: bool
    detail: str
    retry_after_s: float | None = None
    status: int | None = None


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if not headers:
        return None
    lowered = {str(k).lower(): v for k, v in dict(headers).items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None  # unreadable: fall back to our own backoff
        return max(parsed.timestamp() - (now if now is not None else time.time()), 0.0)


def classify(error: BaseException) -> Failure:
    """Classify an exception from the openai or anthropic SDK (both share these shapes), or a 200 that is no
    reply (``reply_body``: an error object is retried unless it blames the request; a page that is not JSON is
    retried like a 5xx)."""
    if isinstance(error, ErrorInBody):
        return Failure(error.retryable, f"HTTP 200 with an error body ({error.kind})")
    if isinstance(error, BodyNotJSON):
        return Failure(True, f"HTTP 200 with a body that is not JSON ({error.content_type})")
    name = type(error).__name__
    status = getattr(error, "status_code", None)
    if status is None and getattr(error, "response", None) is not None:
        status = getattr(error.response, "status_code", None)
    if "Timeout" in name:
        return Failure(True, "timed out")
    if status is None:
        if "Connection" in name:
            return Failure(True, "connection failed")
        return Failure(False, f"{name}")
    headers = getattr(getattr(error, "response", None), "headers", None)
    retry_after = parse_retry_after(headers) if status in (429, 503) else None
    if status >= 500 and blames_request(error_message(error)):
        return Failure(False, f"HTTP {status} ({name}, a validation error of the request: not retried)", None, status)
    retryable = status in RETRIED_STATUS or status >= 500
    return Failure(retryable, f"HTTP {status} ({name})", retry_after, status)


@dataclass(frozen=True)
class RetryPolicy:
    """How many retries, how long to wait between them, and how long one attempt may take."""

    max_retries: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 120.0
    timeout_s: float = 60.0

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "RetryPolicy":
        defaults = cls()
        policy = cls(
            max_retries=int(options.get("max_retries", defaults.max_retries)),
            base_delay_s=float(options.get("retry_base_delay_s", defaults.base_delay_s)),
            max_delay_s=float(options.get("retry_max_delay_s", defaults.max_delay_s)),
            max_retry_after_s=float(options.get("max_retry_after_s", defaults.max_retry_after_s)),
            timeout_s=float(options.get("timeout_s", defaults.timeout_s)),
        )
        if policy.max_retries < 0 or policy.base_delay_s < 0 or policy.timeout_s <= 0:
            raise ValueError("max_retries and retry_base_delay_s must be >= 0, timeout_s > 0")
        return policy

    def backoff_s(self, retry: int, rng: random.Random | None = None) -> float:
        """Full jitter: uniform in [0, min(max_delay, base * 2**retry)] (retry counts from 0)."""
        ceiling = min(self.max_delay_s, self.base_delay_s * (2 ** retry))
        return (rng or random).uniform(0.0, ceiling)

    def wait_s(self, failure: Failure, retry: int, rng: random.Random | None = None) -> float | None:
        """Seconds to wait before retry number ``retry`` (0-based), or None when it must not be retried."""
        if not failure.retryable or retry >= self.max_retries:
            return None
        if failure.retry_after_s is not None:
            if failure.retry_after_s > self.max_retry_after_s:
                return None
            return failure.retry_after_s + (rng or random).uniform(0.0, 0.1 * failure.retry_after_s + 0.01)
        return self.backoff_s(retry, rng)


class ProviderGate:
    """Bounded calls in flight for one provider endpoint, and a pause shared by all its callers."""

    def __init__(self, concurrency: int):
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self.concurrency = concurrency
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._paused_until = 0.0
        self._workers: ThreadPoolExecutor | None = None

    @property
    def workers(self) -> ThreadPoolExecutor:
        """The endpoint's threads, shared by every batch of the process: as many as calls may be in flight,
        so concurrent batches add requests to one queue instead of threads that fight over the GIL."""
        with self._lock:
            if self._workers is None:
                self._workers = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="tooleval-call")
            return self._workers

    def pause(self, seconds: float) -> None:
        """Hold every new attempt on this endpoint for ``seconds`` (a 429's Retry-After)."""
        with self._lock:
            self._paused_until = max(self._paused_until, time.monotonic() + seconds)

    def wait_if_paused(self) -> None:
        while True:
            with self._lock:
                remaining = self._paused_until - time.monotonic()
            if remaining <= 0:
                return
            time.sleep(min(remaining, 1.0))

    def __enter__(self) -> "ProviderGate":
        self._slots.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._slots.release()


_GATES: dict[tuple[str, str, int], ProviderGate] = {}
_GATES_LOCK = threading.Lock()


def gate_for(provider: str, endpoint: str, concurrency: int) -> ProviderGate:
    """The process-wide gate of one endpoint: every batch and thread calling it shares the bound."""
    key = (provider, endpoint, concurrency)
    with _GATES_LOCK:
        if key not in _GATES:
            _GATES[key] = ProviderGate(concurrency)
        return _GATES[key]
