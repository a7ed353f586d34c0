"""What the two batch APIs have in common for ``run_batches``: the state of a batch, a result line read
into (status, reply JSON, error), and control calls (upload, create, retrieve, cancel, list) retried on
the failures a synchronous call retries (429, 5xx, time-outs, dropped connections)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, TypeVar

from tasks.selectors.providers.batch.items import BatchItem
from tasks.selectors.providers.reply_body import BodyNotJSON, ErrorInBody, reply_json
from tasks.selectors.providers.retry_policy import RetryPolicy, classify

T = TypeVar("T")

LIST_SLACK_S = 600.0
"""How far before the intent a listed batch may say it was created (the machines' clocks differ)."""

CONTROL_RETRIES = RetryPolicy(max_retries=4, base_delay_s=1.0, max_delay_s=30.0)
"""Retries of one control call; a poll that still fails is tried again at the next poll."""


@dataclass(frozen=True)
class BatchState:
    batch_id: str
    status: str
    """The provider's word ('in_progress', 'completed', 'expired', 'cancelled', 'ended', ...)."""
    ended: bool
    problem: str | None = None
    """Why the whole batch failed (OpenAI ``failed``: its validation errors)."""
    extra: dict[str, Any] = field(default_factory=dict)


Result = tuple[str, dict[str, Any] | None, str | None]
"""(status, the reply's JSON when succeeded, the error otherwise)."""


class BatchWire:
    """One provider's batch endpoints, through its official SDK; built on the arm's chat adapter (its request
    body, its shared SDK client: key, base URL and headers as a synchronous call has them)."""

    provider: str
    default_base_url: str
    chat_class: Callable[[str, str, Mapping[str, Any]], Any]

    def __init__(self, api_key: str, base_url: str | None, options: Mapping[str, Any],
                 sleep: Callable[[float], None] = time.sleep):
        self.base_url = base_url or self.default_base_url
        self.chat = self.chat_class(api_key, self.base_url, options)
        self.client = self.chat._client  # the process's shared SDK client of this endpoint and key
        self._sleep = sleep

    def body(self, item: BatchItem) -> dict[str, Any]:
        """The request's JSON as the synchronous call sends it (``extra_body`` merged over the fields)."""
        body = self.chat.request_body(item.request)
        body.update(body.pop("extra_body"))
        return body

    def line(self, item: BatchItem) -> dict[str, Any]:
        """The item as a line of the batch input."""
        raise NotImplementedError

    def create(self, chunk_key: str, lines: list[dict[str, Any]], on_file: Callable[[str], None]) -> str:
        """Create the batch (uploading its file first where the API asks); its id."""
        raise NotImplementedError

    def find(self, chunk_key: str, n: int, since: float, known: set[str]) -> str | None:
        """A batch this chunk's create made, found at the provider (None when there is none)."""
        raise NotImplementedError

    def state(self, batch_id: str) -> BatchState:
        raise NotImplementedError

    def cancel(self, batch_id: str) -> None:
        raise NotImplementedError

    def results(self, state: BatchState) -> dict[str, Result]:
        """The result of every line the ended batch reports, by custom id."""
        raise NotImplementedError


def read_body(provider: str, body: Any) -> Result:
    """A line's 200 body as a result: 'succeeded' with its JSON, or 'errored' when it is an error object
    (``reply_body``'s checks, as for a synchronous reply)."""
    try:
        data = reply_json(json.dumps(body).encode(), "application/json", provider)
    except (ErrorInBody, BodyNotJSON) as error:
        return "errored", None, f"HTTP 200 with an error body: {error}"
    return "succeeded", data, None


def error_text(error: Any) -> str:
    """The message of an error object of either API ({"error": {"type", "message"}} or its inner part)."""
    if isinstance(error, Mapping):
        inner = error.get("error", error)
        if isinstance(inner, Mapping):
            kind, message = inner.get("type") or inner.get("code") or "error", inner.get("message") or ""
            return f"{kind}: {message}" if message else str(kind)
        return str(inner)
    return str(error)


def control(call: Callable[[], T], sleep: Callable[[float], None] = time.sleep,
            policy: RetryPolicy = CONTROL_RETRIES) -> T:
    """``call()``, retried on retryable failures under ``policy``; raises the last error."""
    retry = 0
    while True:
        try:
            return call()
        except Exception as error:  # the SDKs' errors
            failure = classify(error)
            wait = policy.wait_s(failure, retry)
            if wait is None:
                raise
            sleep(wait)
            retry += 1
