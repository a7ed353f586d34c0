"""Build a selector for an arm; one instance per process and configuration (models load once)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from tasks.selectors.base import Selector
from tasks.selectors.providers.chat_selector import ChatSelector
from tasks.selectors.offline import OFFLINE_KINDS, offline_selector
from tasks.selectors.offline import clear as offline_selector_cache_clear
from tasks.selectors.routers.position_biased import KIND as POSITION_BIASED
from tasks.selectors.routers.position_biased import _cached as _position_biased
from tasks.selectors.routers.position_biased import position_biased_selector


@lru_cache(maxsize=None)
def _cached_chat(kind: str, model_id: str, options_json: str) -> Selector:
    # hosted chat models; routed arms (options.route / router / threshold) and the judge live inside
    return ChatSelector(kind, model_id, json.loads(options_json))


def selector_for(kind: str, model_id: str, options: dict[str, Any]) -> Selector:
    if kind in OFFLINE_KINDS:
        return offline_selector(kind, model_id, options)
    if kind == POSITION_BIASED:  # a simulation of position sensitivity over an offline router, not a model
        return position_biased_selector(model_id, options)
    if kind in ("openai", "anthropic"):
        return _cached_chat(kind, model_id, json.dumps(options, sort_keys=True))
    raise ValueError(f"unknown selector kind '{kind}'")


def clear_selectors() -> None:
    """Forget every built selector (as a fresh process would start): benchmarks measure cold runs with it."""
    _cached_chat.cache_clear()
    offline_selector_cache_clear()
    _position_biased.cache_clear()
