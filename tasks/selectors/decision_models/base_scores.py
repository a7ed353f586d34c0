"""What the trained decision model's features are made of: the two base routers' scores per offered tool and
the requests' embeddings, under the model's encoder (``encoder``: MiniLM unless the model was trained with
``tooleval train --encoder DIR``), each reading the conversation's last user turn after ``context_turns``
earlier turns (the model file's). The trained selector (trained.py) and its training (train_decision_model.py)
read these; the routers' instances are offline.py's. A model that reads earlier turns also gets
each router's scores of the last user turn alone (``RequestScores.last_turn``)."""

from __future__ import annotations

import numpy as np

from tasks.selectors.base import SelectionInput
from tasks.selectors.decision_models.decision_features import RequestScores
from tasks.selectors.offline import NEVER_ABSTAIN, offline_selector
from tasks.selectors.routers.conversation import CONTEXT_OPTION
from tasks.selectors.routers.embedding import DEFAULT_MODEL_ID


def _options(context_turns: int, kind: str = "lexical") -> dict:
    """The base routers' options: never abstain, and read the model's turns (never the routers' default), the
    whole text always (the model weighs the last turn alone against it itself)."""
    always = {"context_below": None} if kind == "embedding" else {}
    return {**NEVER_ABSTAIN, CONTEXT_OPTION: context_turns, **always}


def router_scores(inputs: list[SelectionInput], encoder: str = DEFAULT_MODEL_ID, context_turns: int = 0
                  ) -> tuple[list[RequestScores], np.ndarray]:
    """Cosine (under ``encoder``) and BM25 per offered tool, and the request embeddings, as the offline routers
    compute them."""
    lexical = offline_selector("lexical", "bm25-okapi", _options(context_turns))
    embedding = offline_selector("embedding", encoder, _options(context_turns, "embedding"))
    cos, bm25 = embedding.scores(inputs), lexical.scores(inputs)
    last: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(inputs)
    if context_turns:  # the last user turn alone too: the model weighs it against the whole text read
        last_cos = offline_selector("embedding", encoder, _options(0, "embedding")).scores(inputs)
        last_bm25 = offline_selector("lexical", "bm25-okapi", _options(0)).scores(inputs)
        last = [(_or_zeros(c, item), _or_zeros(b, item)) for item, c, b in zip(inputs, last_cos, last_bm25)]
    scores = [RequestScores(tuple(t.name for t in item.tools), _or_zeros(c, item), _or_zeros(b, item), turn)
              for item, c, b, turn in zip(inputs, cos, bm25, last)]
    return scores, embedding.embed(request_texts(inputs, context_turns))


def _or_zeros(scores: np.ndarray | None, item: SelectionInput) -> np.ndarray:
    """A router's scores of one request, zeros for each offered tool when it gave none (an empty text)."""
    return np.asarray(scores if scores is not None else np.zeros(len(item.tools)))


def request_texts(inputs: list[SelectionInput], context_turns: int = 0) -> list[str]:
    """The request texts the embedding router encodes (the last user turn after ``context_turns`` earlier turns)."""
    embedding = offline_selector("embedding", DEFAULT_MODEL_ID, _options(context_turns, "embedding"))
    return [embedding.request_text(item) for item in inputs]


def embed_texts(texts: list[str], encoder: str = DEFAULT_MODEL_ID) -> np.ndarray:
    """Unit-length embeddings under ``encoder``, as the embedding router computes them (cached per process)."""
    return offline_selector("embedding", encoder, NEVER_ABSTAIN).embed(texts)
