"""The offline selectors (lexical BM25, MiniLM embedding, the trained decision model): one instance per process
and configuration, so models load once whether a selector serves an arm or a routed arm's decision model (the
two base routers' instances are routers/base_routers.py's, which the trained model's features read too).
It sits above the routers and the decision models and builds on both; the hosted selectors' routing
(providers/routed.py) and the registry reach them through it. The trained model's ``temperature`` option
tempers its probabilities (``tempered.py``; the base routers take theirs in their softmax)."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Mapping

from tasks.selectors.base import Selector
from tasks.selectors.routers.base_routers import _cached as _base_routers
from tasks.selectors.routers.base_routers import base_router
from tasks.selectors.routers.router_setup import DEFAULT_MODELS
from tasks.selectors.routers.router_setup import OFFLINE_ROUTER_KINDS as OFFLINE_KINDS
from tasks.selectors.tempered import TemperedSelector

__all__ = ["DEFAULT_MODELS", "OFFLINE_KINDS", "offline_selector", "clear"]


@lru_cache(maxsize=None)
def _trained(model_id: str, options_json: str) -> Selector:
    from tasks.selectors.decision_models.trained import TrainedSelector  # numpy and the model file: only for arms that use it

    return TrainedSelector(model_id, json.loads(options_json))


def offline_selector(kind: str, model_id: str, options: Mapping[str, Any]) -> Selector:
    if kind == "trained":
        rest = {k: v for k, v in options.items() if k != "temperature"}
        trained = _trained(model_id, json.dumps(rest, sort_keys=True))
        return trained if "temperature" not in options else TemperedSelector(trained, options["temperature"])
    if kind not in OFFLINE_KINDS:
        raise ValueError(f"unknown offline selector kind '{kind}'")
    return base_router(kind, model_id, options)


def clear() -> None:
    """Forget the built offline selectors."""
    _trained.cache_clear()
    _base_routers.cache_clear()
