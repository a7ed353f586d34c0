"""Build a selector for an arm; one instance per process and configuration (models load once)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from tasks.selectors.base import Selector


@lru_cache(maxsize=None)
def _cached(kind: str, model_id: str, options_json: str) -> Selector:
    options: dict[str, Any] = json.loads(options_json)
    if kind == "lexical":
        from tasks.selectors.lexical import LexicalSelector

        return LexicalSelector(model_id, options)
    if kind == "embedding":
        from tasks.selectors.embedding import EmbeddingSelector

        return EmbeddingSelector(model_id, options)
    if kind in ("openai", "anthropic"):
        # hosted chat models; routed arms (options.route / router / threshold) and the judge live inside
        from tasks.selectors.chat_selector import ChatSelector

        return ChatSelector(kind, model_id, options)
    raise ValueError(f"unknown selector kind '{kind}'")


def selector_for(kind: str, model_id: str, options: dict[str, Any]) -> Selector:
    return _cached(kind, model_id, json.dumps(options, sort_keys=True))
