"""The two base routers (lexical BM25, MiniLM embedding), one instance per process and configuration so each
model loads once, and what the trained decision model's features are made of: their scores per offered tool
and the requests' embeddings, under the model's encoder (``encoder``: MiniLM unless the model was trained
with ``tooleval train --encoder DIR``). The trained selector (trained.py) and its training (train_decision_model.py)
read these; neither goes through offline.py, which builds the trained selector itself."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Mapping

import numpy as np

from tasks.selectors.base import SelectionInput, Selector
from tasks.selectors.decision_models.decision_features import RequestScores
from tasks.selectors.routers.embedding import DEFAULT_MODEL_ID, EmbeddingSelector
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


def router_scores(inputs: list[SelectionInput], encoder: str = DEFAULT_MODEL_ID
                  ) -> tuple[list[RequestScores], np.ndarray]:
    """Cosine (under ``encoder``) and BM25 per offered tool, and the request embeddings, as the offline routers
    compute them."""
    lexical = base_router("lexical", "bm25-okapi", NEVER_ABSTAIN)
    embedding = base_router("embedding", encoder, NEVER_ABSTAIN)
    cos, bm25 = embedding.scores(inputs), lexical.scores(inputs)
    scores = [RequestScores(tuple(t.name for t in item.tools),
                            np.asarray(c if c is not None else np.zeros(len(item.tools))),
                            np.asarray(b if b is not None else np.zeros(len(item.tools))))
              for item, c, b in zip(inputs, cos, bm25)]
    return scores, embedding.embed(request_texts(inputs))


def request_texts(inputs: list[SelectionInput]) -> list[str]:
    """The request texts the embedding router encodes (the last user turn)."""
    embedding = base_router("embedding", DEFAULT_MODEL_ID, NEVER_ABSTAIN)
    return [embedding.request_text(item) for item in inputs]


def embed_texts(texts: list[str], encoder: str = DEFAULT_MODEL_ID) -> np.ndarray:
    """Unit-length embeddings under ``encoder``, as the embedding router computes them (cached per process)."""
    return base_router("embedding", encoder, NEVER_ABSTAIN).embed(texts)
