"""What goes into a provider batch and what comes back: one ``BatchItem`` per chat request, one
``BatchOutcome`` per item, and the per-batch limits that split a list of items into batches.

A custom id is short, hash-based and deterministic: the same (run, arm, seed, request, turn, attempt)
gives the same id, so a rerun of the same command finds the requests it submitted before. Both providers
accept ``^[A-Za-z0-9_-]{1,64}$`` (Anthropic's rule; OpenAI's is looser).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Iterator, Sequence

from tasks.selectors.providers.chat_types import ChatReply, ChatRequest

CUSTOM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def custom_id_for(run_id: str, arm: str, seed: int, request_id: str, turn: int = 0, attempt: int = 0) -> str:
    """The item's custom id: ``tv-`` and 32 hex digits of a digest of what names the request. ``attempt``
    numbers a batch retry of the same request (a retry is a new request to the provider)."""
    name = "\x1f".join([run_id, arm, str(seed), request_id, str(turn), str(attempt)])
    return "tv-" + hashlib.sha256(name.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class BatchItem:
    custom_id: str
    request: ChatRequest
    """The same request a synchronous call would send."""
    label: str = ""
    """A readable 'run/arm/seed/request' kept in the journal (never a secret)."""

    def __post_init__(self) -> None:
        if not CUSTOM_ID.match(self.custom_id):
            raise ValueError(f"custom id {self.custom_id!r} is not 1-64 letters, digits, '_' or '-'")


@dataclass(frozen=True)
class BatchOutcome:
    custom_id: str
    status: str
    """'succeeded' | 'errored' | 'expired' | 'canceled'."""
    reply: ChatReply | None
    """The reply, read as the synchronous call reads it (None unless succeeded)."""
    error: str | None
    """The provider's error, scrubbed of secrets."""
    batch_id: str
    """The provider's batch id ('' when the item was never submitted)."""


@dataclass(frozen=True)
class BatchLimits:
    """What one batch may hold: requests, and bytes of its input (OpenAI: the JSONL file; Anthropic: the
    create request's body)."""

    max_requests: int
    max_bytes: int


LIMITS = {
    "openai": BatchLimits(max_requests=50_000, max_bytes=200 * 1024 * 1024),
    "anthropic": BatchLimits(max_requests=100_000, max_bytes=256 * 1024 * 1024),
}
"""The providers' published per-batch limits (OpenAI: 50,000 requests, a 200 MB file; Anthropic:
100,000 requests or 256 MB)."""

BYTES_MARGIN = 64 * 1024
"""Bytes kept free in each batch for the envelope around the lines."""


def split(sizes: Sequence[int], limits: BatchLimits) -> Iterator[list[int]]:
    """Indices of the items in batch order, cut where the next would pass a limit (``sizes``: each item's
    bytes in the batch input). An item alone over the byte limit is left out (the caller lands it as an
    error)."""
    room = max(limits.max_bytes - BYTES_MARGIN, 1) if limits.max_bytes > 2 * BYTES_MARGIN else limits.max_bytes
    chunk: list[int] = []
    used = 0
    for index, size in enumerate(sizes):
        if size > room:
            continue
        if chunk and (len(chunk) >= limits.max_requests or used + size > room):
            yield chunk
            chunk, used = [], 0
        chunk.append(index)
        used += size
    if chunk:
        yield chunk
