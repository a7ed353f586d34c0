"""Features of the trained decision model, per (request, offered tool) and per request for 'none'.

Per (request, tool), from the two offline routers and the labelled examples:

- ``cos``, ``cos_gap`` (to the best offered tool), ``cos_z`` (standardised among the offered tools): MiniLM
  cosine of the request and the tool's text, as the embedding router scores it;
- ``bm25_rel`` (share of the best offered tool's score), ``bm25_log`` (log1p of the score): BM25 as the
  lexical router scores it;
- ``knn1``, ``knn3``, ``knn_gap``, ``seen``: the cosine of the request to the most similar (and the mean of
  the three most similar) labelled examples whose label is this tool, its gap to the best offered tool's,
  and whether the tool has any example. A tool never seen in training gets zeros and ``seen = 0``, so the
  cosine and BM25 features decide for it: the model generalises to unseen tools (the "hybrid").

Per request, for the 'none' option: a bias, the best cosine, the cosine margin of the two best tools, log1p
of the best BM25 score, the best ``knn1`` of any offered tool, and ``knn1`` / ``knn3`` of examples labelled
'none'.

The kNN features never use an example with the request's own text, nor any example of an excluded fold
(cross-fitting: the model of fold k neither learns from nor looks up fold k).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from schemas.catalogue import NONE_LABEL

TOOL_FEATURES = ("cos", "cos_gap", "cos_z", "bm25_rel", "bm25_log", "knn1", "knn3", "knn_gap", "seen")
NONE_FEATURES = ("bias", "cos_max", "cos_margin", "bm25_log_max", "knn1_max", "none_knn1", "none_knn3")
KNN_TOP = 3

_SPACES = re.compile(r"\s+")


def text_hash(text: str) -> str:
    """sha256 of the request text, trimmed, lower case, runs of white space as one space."""
    return hashlib.sha256(_SPACES.sub(" ", text.strip().lower()).encode()).hexdigest()


@dataclass(frozen=True)
class Examples:
    """The labelled examples the kNN features look up."""

    embeddings: np.ndarray
    """examples x dimensions, unit length."""
    labels: np.ndarray
    """Label per example (object array of str)."""
    text_hashes: np.ndarray
    folds: np.ndarray


@dataclass(frozen=True)
class RequestScores:
    """What the routers say of one request: a cosine and a BM25 score per offered tool (offered order)."""

    tools: tuple[str, ...]
    cos: np.ndarray
    bm25: np.ndarray


def knn_by_label(query: np.ndarray, query_hashes: Sequence[str], examples: Examples, exclude_fold: int | None
                 ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """label -> (knn1, knn3) per query (NaN where no usable example has the label)."""
    if len(examples.labels) == 0 or len(query) == 0:
        return {}
    sims = query.astype(np.float32) @ examples.embeddings.astype(np.float32).T
    blocked = np.asarray(query_hashes, dtype=object)[:, None] == examples.text_hashes[None, :]
    if exclude_fold is not None:
        blocked |= (examples.folds == exclude_fold)[None, :]
    sims = np.where(blocked, -np.inf, sims).astype(np.float64)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    order = np.argsort(examples.labels, kind="stable")
    labels_sorted = examples.labels[order]
    starts = np.flatnonzero(np.r_[True, labels_sorted[1:] != labels_sorted[:-1]])
    ends = np.r_[starts[1:], len(order)]
    for start, end in zip(starts, ends):
        block = sims[:, order[start:end]]
        k = min(KNN_TOP, block.shape[1])
        top = -np.partition(-block, k - 1, axis=1)[:, :k] if block.shape[1] > k else block
        finite = np.isfinite(top)
        count = finite.sum(axis=1)
        top1 = np.where(count > 0, np.max(np.where(finite, top, -np.inf), axis=1), np.nan)
        top3 = np.where(count > 0, np.where(finite, top, 0.0).sum(axis=1) / np.maximum(count, 1), np.nan)
        out[str(labels_sorted[start])] = (top1, top3)
    return out


def feature_arrays(scores: Sequence[RequestScores], query: np.ndarray, query_hashes: Sequence[str],
                   examples: Examples, exclude_fold: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tool features: requests x max tools x features, mask: requests x max tools, 'none' features)."""
    n = len(scores)
    width = max((len(s.tools) for s in scores), default=0)
    tool_x = np.zeros((n, max(width, 1), len(TOOL_FEATURES)))
    mask = np.zeros((n, max(width, 1)), dtype=bool)
    none_x = np.zeros((n, len(NONE_FEATURES)))
    knn = knn_by_label(query, query_hashes, examples, exclude_fold)
    none_knn = knn.get(NONE_LABEL)
    for i, s in enumerate(scores):
        t = len(s.tools)
        none_x[i, 0] = 1.0
        if none_knn is not None and np.isfinite(none_knn[0][i]):
            none_x[i, 5], none_x[i, 6] = none_knn[0][i], none_knn[1][i]
        if t == 0:
            continue
        mask[i, :t] = True
        cos, bm = s.cos, np.maximum(s.bm25, 0.0)
        top_b = bm.max()
        ordered = np.sort(cos)[::-1]
        x = tool_x[i, :t]
        x[:, 0] = cos
        x[:, 1] = cos - ordered[0]
        x[:, 2] = (cos - cos.mean()) / cos.std() if t > 1 and cos.std() > 1e-9 else 0.0
        x[:, 3] = bm / top_b if top_b > 0 else 0.0
        x[:, 4] = np.log1p(bm)
        for j, name in enumerate(s.tools):
            found = knn.get(name)
            if found is not None and np.isfinite(found[0][i]):
                x[j, 5], x[j, 6], x[j, 8] = found[0][i], found[1][i], 1.0
        if x[:, 8].any():
            x[:, 7] = np.where(x[:, 8] > 0, x[:, 5] - x[x[:, 8] > 0, 5].max(), 0.0)
        none_x[i, 1] = ordered[0]
        none_x[i, 2] = ordered[0] - ordered[1] if t > 1 else 1.0
        none_x[i, 3] = np.log1p(top_b)
        none_x[i, 4] = x[:, 5].max()
    return tool_x, mask, none_x
