"""The offline selectors (lexical BM25, MiniLM embedding, the trained decision model): one instance per process and configuration, so
models load once whether a selector serves an arm or a routed arm's decision model."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Mapping

from tasks.selectors.base import Selector
from tasks.selectors.embedding import EmbeddingSelector
from tasks.selectors.lexical import LexicalSelector

from tasks.selectors.router_setup import DEFAULT_MODELS, OFFLINE_ROUTER_KINDS as OFFLINE_KINDS

__all__ = ["DEFAULT_MODELS", "OFFLINE_KINDS", "offline_selector", "clear"]


@lru_cache(maxsize=None)
def _cached(kind: str, model_id: str, options_json: str) -> Selector:
    options: dict[str, Any] = json.loads(options_json)
    if kind == "lexical":
        return LexicalSelector(model_id, options)
    if kind == "embedding":
        return EmbeddingSelector(model_id, options)
    if kind == "trained":
        from tasks.selectors.trained import TrainedSelector  # its training code imports the two routers

        return TrainedSelector(model_id, options)
    raise ValueError(f"unknown offline selector kind '{kind}'")


def offline_selector(kind: str, model_id: str, options: Mapping[str, Any]) -> Selector:
    return _cached(kind, model_id, json.dumps(dict(options), sort_keys=True))


def clear() -> None:
    """Forget the built offline selectors."""
    _cached.cache_clear()
