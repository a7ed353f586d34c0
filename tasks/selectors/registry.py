"""Build a selector for an arm; one instance per process and configuration (models load once)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from tasks.selectors import offline
from tasks.selectors.base import Selector
from tasks.selectors.offline import OFFLINE_KINDS, POSITION_BIASED, offline_selector


@lru_cache(maxsize=None)
def _cached_chat(kind: str, model_id: str, options_json: str) -> Selector:
    # hosted chat models; routed arms (options.route / router / threshold) and the judge live inside
    from tasks.selectors.providers.chat_selector import ChatSelector

    return ChatSelector(kind, model_id, json.loads(options_json))


def selector_for(kind: str, model_id: str, options: dict[str, Any]) -> Selector:
    if kind in OFFLINE_KINDS or kind == POSITION_BIASED:
        return offline_selector(kind, model_id, options)
    if kind in ("openai", "anthropic"):
        return _cached_chat(kind, model_id, json.dumps(options, sort_keys=True))
    raise ValueError(f"unknown selector kind '{kind}'")


def clear_selectors() -> None:
    """Forget every built selector (as a fresh process would start): benchmarks measure cold runs with it."""
    _cached_chat.cache_clear()
    offline.clear()
