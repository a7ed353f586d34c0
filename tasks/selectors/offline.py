"""The offline selectors (lexical BM25, MiniLM embedding, the trained decision model, the position-biased
simulation): one instance per process and configuration, so models load once whether a selector serves an
arm, a routed arm's decision model, the simulation's base or the trained model's features. The trained
model's ``temperature`` option tempers its probabilities (``TemperedSelector``; the base routers take theirs
in their softmax), so ``tooleval fit`` can set a fitted temperature on any offline router."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Mapping, Sequence

from schemas.selection.rows import Selection
from tasks.selectors.base import SelectionInput, Selector
from tasks.selectors.routers.position_biased import KIND as POSITION_BIASED
from tasks.selectors.routers.position_biased import PositionBiasedSelector
from tasks.selectors.routers.router_setup import DEFAULT_MODELS, NEVER
from tasks.selectors.routers.router_setup import OFFLINE_ROUTER_KINDS as OFFLINE_KINDS

__all__ = ["DEFAULT_MODELS", "NEVER_ABSTAIN", "OFFLINE_KINDS", "TemperedSelector", "offline_selector", "clear"]

NEVER_ABSTAIN = {"abstain_threshold": NEVER}


class TemperedSelector:
    """``inner``'s selections with tempered probabilities: each raised to ``1 / temperature`` and renormalised
    (``tasks/stats/calibration.tempered_probabilities``), the confidence that of the pick, which never changes;
    every other attribute is ``inner``'s."""

    def __init__(self, inner: Selector, temperature: Any) -> None:
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0:
            raise ValueError(f"temperature must be a number > 0, got {temperature!r}")
        self.inner, self.temperature = inner, float(temperature)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def select(self, batch: Sequence[SelectionInput]) -> list[Selection]:
        from tasks.stats.calibration import tempered_probabilities  # numpy: only for arms that use it

        selections = self.inner.select(batch)
        for selection in selections:
            if selection.chosen is None or not selection.probabilities:
                continue
            labels = list(selection.probabilities)
            (row,) = tempered_probabilities([list(selection.probabilities.values())], self.temperature).tolist()
            selection.probabilities = dict(zip(labels, row))
            selection.confidence = selection.probabilities[selection.chosen]
        return selections


@lru_cache(maxsize=None)
def _built(kind: str, model_id: str, options_json: str) -> Selector:
    options: dict[str, Any] = json.loads(options_json)
    if kind == "lexical":
        from tasks.selectors.routers.lexical import LexicalSelector

        return LexicalSelector(model_id, options)
    if kind == "embedding":
        from tasks.selectors.routers.embedding import EmbeddingSelector  # numpy and torch: only for arms that use it

        return EmbeddingSelector(model_id, options)
    if kind == "trained" and "temperature" in options:
        temperature = options.pop("temperature")
        return TemperedSelector(offline_selector(kind, model_id, options), temperature)
    if kind == "trained":
        from tasks.selectors.decision_models.trained import TrainedSelector  # the model file: only for its arms

        return TrainedSelector(model_id, options)
    if kind == POSITION_BIASED:  # a simulation of position sensitivity over a base router, not a model
        return PositionBiasedSelector(model_id, options)
    raise ValueError(f"unknown offline selector kind '{kind}'")


def offline_selector(kind: str, model_id: str, options: Mapping[str, Any]) -> Selector:
    """The process's selector of ``kind`` for this model and options, built the first time."""
    return _built(kind, model_id, json.dumps(dict(options), sort_keys=True))


def clear() -> None:
    """Forget the built offline selectors."""
    _built.cache_clear()
