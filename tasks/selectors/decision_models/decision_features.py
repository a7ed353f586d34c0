"""Features of the trained decision model, per (request, offered tool) and per request for 'none'.

Per (request, tool), from the two offline routers and the labelled examples:

- ``cos``, ``cos_gap`` (to the best offered tool), ``cos_z`` (standardised among the offered tools): MiniLM
  cosine of the request and the tool's text, as the embedding router scores it;
- ``bm25_rel`` (share of the best offered tool's score), ``bm25_log`` (log1p of the score): BM25 as the
  lexical router scores it;
- ``knn1``, ``knn3``, ``knn_gap``, ``seen``: the cosine of the request to the most similar (and the mean of
  the three most similar) labelled examples whose label is this tool, its gap to the best offered tool's,
  and whether the tool has any example. A tool never seen in training gets zeros and ``seen = 0``, so the
  cosine and BM25 features decide for it: the model generalises to unseen tools (the "hybrid");
- ``cos_unseen``, ``cos_gap_unseen``, ``cos_z_unseen``, ``bm25_rel_unseen``, ``bm25_log_unseen``: the same
  cosine and BM25 features for a tool without examples, 0 for a tool with: weights of their own for unseen
  tools, learned from the transfer copies (below) without bending the weights that score seen tools.

- ``cos_last``, ``cos_last_gap``, ``bm25_last_rel``: for a model that reads earlier turns (``context_turns``
  above 0), the cosine, its gap to the best offered tool's and the BM25 share of the **last user turn alone**
  beside the features of the whole text read: the weights of the two say how much the earlier turns count
  (a learned weighting of the conversation); 0 for a model that reads the last turn alone.

- ``probe``, ``probe_gap``, ``probe_seen``: the embedding probe's log-probability of the tool
  (``embedding_probe.py``: a multinomial logistic regression from the request's embedding to the labels it
  learned from), its gap to the best offered tool's, and whether the tool is one of the probe's labels (0, 0,
  0 for a tool that is not).

Per request, for the 'none' option: a bias, the best cosine, the cosine margin of the two best tools, log1p
of the best BM25 score, the best ``knn1`` of any offered tool, ``knn1`` / ``knn3`` of examples labelled
'none'; and where no offered tool has an example, ``no_examples`` (1, a bias of its own) and the cosine and
BM25 'none' features again (``cos_max_no_examples``, ...; all 0 where some tool has examples); ``probe_none``,
the probe's log-probability of 'none' (0 where 'none' is not one of its labels, or none of the offered tools
is).

The kNN features never use an example with the request's own text, nor any example of an excluded fold
(cross-fitting: the model of fold k neither learns from nor looks up fold k).

``as_unseen`` gives the features a request would have if none of its tools had labelled examples (the
model's 'none' examples still looked up, as they are wherever it runs): training on such copies (``tooleval
train``'s transfer copies) teaches the model to score tools and domains it has no examples for. ``nearest_example`` (from ``feature_arrays_with_nearest``)
is the cosine of the request to its most similar usable example, any label: how far it is from what the
model learned from (the out-of-domain signal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from schemas.catalogue import NONE_LABEL
from tasks.selectors.decision_models.example_text import text_hash

UNSEEN_TOOL_FEATURES = {"cos_unseen": "cos", "cos_gap_unseen": "cos_gap", "cos_z_unseen": "cos_z",
                        "bm25_rel_unseen": "bm25_rel", "bm25_log_unseen": "bm25_log"}
"""Tool feature -> the feature it repeats for a tool without examples (0 for a tool with)."""
NO_EXAMPLES_NONE_FEATURES = {"no_examples": "bias", "cos_max_no_examples": "cos_max",
                             "cos_margin_no_examples": "cos_margin", "bm25_log_max_no_examples": "bm25_log_max"}
"""'none' feature -> the feature it repeats where no offered tool has an example (0 elsewhere)."""
PROBE_TOOL_FEATURES = ("probe", "probe_gap", "probe_seen")
PROBE_NONE_FEATURES = ("probe_none",)
LAST_TURN_TOOL_FEATURES = ("cos_last", "cos_last_gap", "bm25_last_rel")
TOOL_FEATURES = ("cos", "cos_gap", "cos_z", "bm25_rel", "bm25_log", "knn1", "knn3", "knn_gap", "seen",
                 *UNSEEN_TOOL_FEATURES, *PROBE_TOOL_FEATURES, *LAST_TURN_TOOL_FEATURES)
NONE_FEATURES = ("bias", "cos_max", "cos_margin", "bm25_log_max", "knn1_max", "none_knn1", "none_knn3",
                 *NO_EXAMPLES_NONE_FEATURES, *PROBE_NONE_FEATURES)
KNN_TOP = 3
EXAMPLE_TOOL_FEATURES = ("knn1", "knn3", "knn_gap", "seen", *PROBE_TOOL_FEATURES)
"""The tool features that come from labelled examples: 0 for a tool with none."""
EXAMPLE_NONE_FEATURES = ("knn1_max", *PROBE_NONE_FEATURES)
"""The 'none' features that come from the offered tools' examples: 0 where they have none (``probe_none`` too:
where no offered tool is one of the probe's labels, its 'none' is a guess about another domain). ``none_knn1`` and
``none_knn3`` are kept as computed: wherever the model runs, its own 'none' examples are there to look up,
and zeroing them too traded answerable requests for irrelevant ones on BFCL live
(docs/measured/decision-models.md)."""

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
    last_turn: tuple[np.ndarray, np.ndarray] | None = None
    """(cosine, BM25) of the last user turn alone, when ``cos`` and ``bm25`` read earlier turns too."""


KNN_BLOCK = 1024
"""Queries per block of the query x examples similarities: memory grows with the examples, not their square.

A float32 product's rounding depends on the shape BLAS is given, so a cosine computed in a block can differ
from the same cosine computed in the whole matrix by one float32 unit (<= 1.2e-7 for unit vectors); with
at most ``KNN_BLOCK`` queries (one block) the features are bit for bit those of the whole-matrix code."""


def _label_groups(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(order: examples sorted by label, stable; the sorted labels; start and end of each label's run)."""
    order = np.argsort(labels, kind="stable")
    labels_sorted = labels[order]
    starts = np.flatnonzero(np.r_[True, labels_sorted[1:] != labels_sorted[:-1]])
    ends = np.r_[starts[1:], len(order)]
    return order, labels_sorted, starts, ends


def knn_by_label(query: np.ndarray, query_hashes: Sequence[str], examples: Examples, exclude_fold: int | None,
                 block_rows: int | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """label -> (knn1, knn3) per query (NaN where no usable example has the label).

    Computed ``block_rows`` (default ``KNN_BLOCK``) queries at a time (float32 cosines, as float64 for the
    top-k), with the text hashes of both sides mapped once to integer codes, so a block's "same text" mask
    is an integer compare.
    """
    n = len(query)
    block_rows = block_rows or KNN_BLOCK
    if len(examples.labels) == 0 or n == 0:
        return {}
    order, labels_sorted, starts, ends = _label_groups(examples.labels)
    _, codes = np.unique(np.concatenate([np.asarray(query_hashes, dtype=object).astype(str),
                                         np.asarray(examples.text_hashes, dtype=object).astype(str)]),
                         return_inverse=True)
    codes = codes.reshape(-1)
    query_codes, example_codes = codes[:n], codes[n:][order]
    excluded = (np.asarray(examples.folds)[order] == exclude_fold) if exclude_fold is not None else None
    emb = examples.embeddings.astype(np.float32)  # multiplied as given: another layout rounds differently
    q32 = query.astype(np.float32)
    top1s = [np.empty(n) for _ in starts]
    top3s = [np.empty(n) for _ in starts]
    for lo in range(0, n, block_rows):
        hi = min(lo + block_rows, n)
        sims = (q32[lo:hi] @ emb.T)[:, order].astype(np.float64)  # columns grouped by label
        blocked = query_codes[lo:hi, None] == example_codes[None, :]
        if excluded is not None:
            blocked |= excluded[None, :]
        sims[blocked] = -np.inf
        for g, (start, end) in enumerate(zip(starts, ends)):
            block = sims[:, start:end]
            k = min(KNN_TOP, block.shape[1])
            top = -np.partition(-block, k - 1, axis=1)[:, :k] if block.shape[1] > k else block
            finite = np.isfinite(top)
            count = finite.sum(axis=1)
            top1s[g][lo:hi] = np.where(count > 0, np.max(np.where(finite, top, -np.inf), axis=1), np.nan)
            top3s[g][lo:hi] = np.where(count > 0, np.where(finite, top, 0.0).sum(axis=1) / np.maximum(count, 1),
                                       np.nan)
    return {str(labels_sorted[start]): (top1s[g], top3s[g]) for g, start in enumerate(starts)}


@dataclass(frozen=True)
class ProbeScores:
    """The embedding probe's log-probabilities for the requests: requests x labels, NaN where the probe that
    scored a request does not have the label (in training, rows come from probes fitted on different folds)."""

    labels: tuple[str, ...]
    log_proba: np.ndarray


def feature_arrays(scores: Sequence[RequestScores], query: np.ndarray, query_hashes: Sequence[str],
                   examples: Examples, exclude_fold: int | None,
                   probe: ProbeScores | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tool features: requests x max tools x features, mask: requests x max tools, 'none' features)."""
    return feature_arrays_with_nearest(scores, query, query_hashes, examples, exclude_fold, probe)[:3]


def as_unseen(tool_x: np.ndarray, mask: np.ndarray, none_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Copies of the features as they would be for tools without labelled examples: every tool unseen (its
    kNN features and ``seen`` 0, ``knn1_max`` 0); the cosine, BM25, bias and 'none'-example features as they
    are, and the cosine and BM25 ones repeated in the unseen-tool and no-example features."""
    tools, nones = tool_x.copy(), none_x.copy()
    make_unseen(tools, nones, mask)
    return tools, nones


def make_unseen(tool_x: np.ndarray, none_x: np.ndarray, mask: np.ndarray) -> None:
    """``as_unseen`` in place (training writes the copies straight into the rows it fits on)."""
    tool_x[..., [TOOL_FEATURES.index(f) for f in EXAMPLE_TOOL_FEATURES]] = 0.0
    none_x[:, [NONE_FEATURES.index(f) for f in EXAMPLE_NONE_FEATURES]] = 0.0
    _unseen_features(tool_x, none_x, np.zeros(mask.shape, dtype=bool), mask)


def _unseen_features(tool_x: np.ndarray, none_x: np.ndarray, seen: np.ndarray, mask: np.ndarray) -> None:
    """Fill the unseen-tool and no-example repeats in place from the base features and ``seen``."""
    unseen = mask & ~seen
    for name, base in UNSEEN_TOOL_FEATURES.items():
        tool_x[..., TOOL_FEATURES.index(name)] = np.where(unseen, tool_x[..., TOOL_FEATURES.index(base)], 0.0)
    none_of_them = mask.any(axis=1) & ~(mask & seen).any(axis=1)
    for name, base in NO_EXAMPLES_NONE_FEATURES.items():
        none_x[:, NONE_FEATURES.index(name)] = np.where(none_of_them, none_x[:, NONE_FEATURES.index(base)], 0.0)


def model_columns(tool_features: Sequence[str], none_features: Sequence[str]) -> tuple[list[int], list[int]] | None:
    """Where a model file's features sit among this code's (a file written before a feature was added lists
    fewer); None when it names one this code does not compute (a hand-made file)."""
    if not (set(tool_features) <= set(TOOL_FEATURES) and set(none_features) <= set(NONE_FEATURES)):
        return None
    return [TOOL_FEATURES.index(f) for f in tool_features], [NONE_FEATURES.index(f) for f in none_features]


def feature_arrays_with_nearest(scores: Sequence[RequestScores], query: np.ndarray, query_hashes: Sequence[str],
                                examples: Examples, exclude_fold: int | None, probe: ProbeScores | None = None
                                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``feature_arrays``' three arrays, and per request the cosine of its nearest usable example, any label
    (NaN when there is none): the same examples the kNN features look up. Without ``probe`` the probe
    features are 0."""
    n = len(scores)
    width = max((len(s.tools) for s in scores), default=0)
    tool_x = np.zeros((n, max(width, 1), len(TOOL_FEATURES)))
    mask = np.zeros((n, max(width, 1)), dtype=bool)
    none_x = np.zeros((n, len(NONE_FEATURES)))
    none_x[:, 0] = 1.0
    for i, s in enumerate(scores):  # the router features: per request, the offered tools at once
        t = len(s.tools)
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
        none_x[i, 1] = ordered[0]
        none_x[i, 2] = ordered[0] - ordered[1] if t > 1 else 1.0
        none_x[i, 3] = np.log1p(top_b)
        if s.last_turn is not None:
            _last_turn_features(x, *s.last_turn)
    knn = knn_by_label(query, query_hashes, examples, exclude_fold)
    nearest = np.full(n, np.nan)
    for top1, _ in knn.values():
        nearest = np.fmax(nearest, top1)
    none_knn = knn.get(NONE_LABEL)
    if none_knn is not None:
        found = np.isfinite(none_knn[0])
        none_x[found, 5], none_x[found, 6] = none_knn[0][found], none_knn[1][found]
    # the kNN features: one gather from label x request arrays (column -1: a label with no example, NaN)
    index = {name: j for j, name in enumerate(knn)}
    knn1 = np.full((len(index) + 1, n), np.nan)
    knn3 = np.full((len(index) + 1, n), np.nan)
    for name, j in index.items():
        knn1[j], knn3[j] = knn[name]
    tool_label = _label_columns(scores, index, mask.shape)
    rows = np.arange(n)[:, None]
    k1, k3 = knn1[tool_label, rows], knn3[tool_label, rows]
    seen = mask & np.isfinite(k1)
    tool_x[..., 5] = np.where(seen, k1, 0.0)
    tool_x[..., 6] = np.where(seen, k3, 0.0)
    tool_x[..., 8] = seen
    best_seen = np.max(np.where(seen, tool_x[..., 5], -np.inf), axis=1, initial=-np.inf)
    tool_x[..., 7] = np.where(seen, tool_x[..., 5] - best_seen[:, None], 0.0)
    offered = mask.any(axis=1)
    none_x[offered, 4] = np.max(np.where(mask, tool_x[..., 5], -np.inf), axis=1, initial=-np.inf)[offered]
    if probe is not None:
        _probe_features(tool_x, none_x, mask, scores, probe)
    _unseen_features(tool_x, none_x, seen, mask)
    return tool_x, mask, none_x, nearest


def _last_turn_features(x: np.ndarray, cos: np.ndarray, bm25: np.ndarray) -> None:
    """Fill one request's last-turn features (offered tools x features) in place."""
    first = TOOL_FEATURES.index(LAST_TURN_TOOL_FEATURES[0])
    bm = np.maximum(bm25, 0.0)
    x[:, first] = cos
    x[:, first + 1] = cos - cos.max()
    x[:, first + 2] = bm / bm.max() if bm.max() > 0 else 0.0


def _label_columns(scores: Sequence[RequestScores], index: dict[str, int], shape: tuple[int, int]) -> np.ndarray:
    """requests x offered tools: each tool's position in ``index`` (by name); ``len(index)`` for a tool that
    is not in it and for padding (the caller's extra last row or column)."""
    columns = np.full(shape, len(index))
    for i, s in enumerate(scores):
        columns[i, :len(s.tools)] = [index.get(name, len(index)) for name in s.tools]
    return columns


def _probe_features(tool_x: np.ndarray, none_x: np.ndarray, mask: np.ndarray, scores: Sequence[RequestScores],
                    probe: ProbeScores) -> None:
    """Fill ``probe``, ``probe_gap``, ``probe_seen`` and ``probe_none`` in place (one gather, as the kNN ones)."""
    n = len(scores)
    index = {name: j for j, name in enumerate(probe.labels)}
    padded = np.concatenate([probe.log_proba, np.full((n, 1), np.nan)], axis=1)  # last column: not a label
    log_p = padded[np.arange(n)[:, None], _label_columns(scores, index, mask.shape)]
    known = mask & np.isfinite(log_p)
    best = np.max(np.where(known, log_p, -np.inf), axis=1, initial=-np.inf)
    first = TOOL_FEATURES.index("probe")
    tool_x[..., first] = np.where(known, log_p, 0.0)
    tool_x[..., first + 1] = np.where(known, log_p - best[:, None], 0.0)
    tool_x[..., first + 2] = known
    if NONE_LABEL in index:
        none_log_p = probe.log_proba[:, index[NONE_LABEL]]
        usable = known.any(axis=1) & np.isfinite(none_log_p)
        none_x[:, NONE_FEATURES.index("probe_none")] = np.where(usable, none_log_p, 0.0)
