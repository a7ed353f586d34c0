"""The two base routers (lexical BM25, MiniLM embedding), one instance per process and configuration so each
model loads once, whether it serves an arm, a routed arm's decision model or the trained decision model's
features (decision_models/base_scores.py)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Mapping

from tasks.selectors.base import Selector
from tasks.selectors.routers.embedding import EmbeddingSelector
from tasks.selectors.routers.lexical import LexicalSelector

NEVER_ABSTAIN = {"abstain_threshold": "never"}


@lru_cache(maxsize=None)
def _cached(kind: str, model_id: str, options_json: str) -> Selector:
    options: dict[str, Any] = json.loads(options_json)
    if kind == "lexical":
        return LexicalSelector(model_id, options)
    if kind == "embedding":
        return EmbeddingSelector(model_id, options)
    raise ValueError(f"unknown base router kind '{kind}'")


def base_router(kind: str, model_id: str, options: Mapping[str, Any]) -> Any:
    return _cached(kind, model_id, json.dumps(dict(options), sort_keys=True))
