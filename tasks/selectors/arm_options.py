"""Which of an arm's options can change an answer, for any selector: the rest (load, keys, prices) change how
calls are made or costed, and stay out of cache keys, traces and the one-change rule."""

from __future__ import annotations

from typing import Any, Mapping

LOAD_OPTIONS = frozenset({"concurrency", "timeout_s", "max_retries", "retry_base_delay_s", "retry_max_delay_s",
                          "max_retry_after_s", "batch_poll_s"})
KEY_OPTIONS = frozenset({"api_key_env", "api_key_file"})
BOOKKEEPING_OPTIONS = frozenset({"prices", "price_file"})
SEND_OPTIONS = frozenset({"batch"})
"""How requests travel: ``batch`` sends a hosted arm's chat requests through the provider's batch API (the same
request, the same answer, another price)."""
TRANSPORT_OPTIONS = LOAD_OPTIONS | KEY_OPTIONS | BOOKKEEPING_OPTIONS | SEND_OPTIONS
"""Options that change how calls are made or costed, never an answer: left out of the cache key and of
the 'selector' respect of the one-change rule."""


def answer_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options that can change an answer (transport, keys and prices removed), nested ones too."""
    kept: dict[str, Any] = {}
    for name, value in options.items():
        if name in TRANSPORT_OPTIONS:
            continue
        if isinstance(value, Mapping):
            value = answer_options(value)
        kept[name] = value
    return kept
