"""The kNN and feature arrays of the decision model (tasks/selectors/decision_models/decision_features.py), computed in
blocks of queries on integer text codes with the per-tool loop vectorised, against the former whole-matrix,
per-tool-loop implementation (copied below as the reference) on a seeded random problem: repeated texts,
excluded folds, labels without examples, tools nobody labelled, requests offered no tools, a 'none' label.

In one block (at most ``KNN_BLOCK`` queries) every feature is bit for bit the reference's. In several
blocks, a cosine can differ by one float32 unit (BLAS rounds a product according to its shape: the whole
matrix's values are no more exact than a block's), so there the test allows FLOAT32_UNIT and asks for the
same NaN / seen pattern exactly."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pytest

import tasks.selectors.decision_models.decision_features as decision_features
from schemas.catalogue import NONE_LABEL
from tasks.selectors.decision_models.decision_features import (
    KNN_TOP,
    NONE_FEATURES,
    TOOL_FEATURES,
    Examples,
    RequestScores,
    feature_arrays,
    knn_by_label,
)

FLOAT32_UNIT = 2.0 ** -23 * 2  # two float32 units at 1.0: a cosine's rounding in a block vs the whole matrix


def reference_knn_by_label(query, query_hashes, examples, exclude_fold):
    """The kNN features computed the plain way (a full query x examples matrix), not in blocks."""
    if len(examples.labels) == 0 or len(query) == 0:
        return {}
    sims = query.astype(np.float32) @ examples.embeddings.astype(np.float32).T
    blocked = np.asarray(query_hashes, dtype=object)[:, None] == examples.text_hashes[None, :]
    if exclude_fold is not None:
        blocked |= (examples.folds == exclude_fold)[None, :]
    sims = np.where(blocked, -np.inf, sims).astype(np.float64)
    out = {}
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


def reference_feature_arrays(scores: Sequence[RequestScores], query, query_hashes, examples, exclude_fold):
    """The features computed the plain way (a Python loop over each request's tools), and the unseen-tool
    and no-example repeats derived from them as the module derives them."""
    n = len(scores)
    width = max((len(s.tools) for s in scores), default=0)
    tool_x = np.zeros((n, max(width, 1), len(TOOL_FEATURES)))
    mask = np.zeros((n, max(width, 1)), dtype=bool)
    none_x = np.zeros((n, len(NONE_FEATURES)))
    knn = reference_knn_by_label(query, query_hashes, examples, exclude_fold)
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
    # the unseen-tool and no-example repeats: derived from the features above
    decision_features._unseen_features(tool_x, none_x, tool_x[..., 8] > 0, mask)
    return tool_x, mask, none_x


def random_problem(seed: int, n: int = 700, dims: int = 16):
    """Requests that are also the examples (as in training) plus queries that are not; texts repeated."""
    rng = np.random.default_rng(seed)
    tools = [f"tool_{k}" for k in range(12)]  # tool_10 and tool_11 are never anyone's label
    labels = np.array([NONE_LABEL if rng.random() < 0.15 else tools[rng.integers(0, 10)] for _ in range(n)],
                      dtype=object)
    labels[labels == "tool_9"] = "tool_8" if rng.random() < 0.5 else "tool_9"
    labels[-1] = "only_once"  # a label with one example: excluded with its fold, it has none left
    emb = rng.normal(size=(n, dims))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    texts = rng.integers(0, n // 2, size=n)  # about half the texts repeat
    hashes = np.array([f"{t:064x}" for t in texts], dtype=object)
    emb[:] = emb[texts]  # the same text, the same embedding
    folds = rng.integers(0, 5, size=n)
    examples = Examples(emb, labels, hashes, folds)
    scores = []
    for _ in range(n):
        t = int(rng.choice([0, 1, 2, 5, 12], p=[0.1, 0.15, 0.25, 0.3, 0.2]))
        names = tuple(rng.choice(tools + ["only_once"], size=t, replace=False).tolist())
        cos = rng.normal(size=t)
        if t > 2 and rng.random() < 0.2:
            cos[:] = cos[0]  # no spread: cos_z falls back to 0
        scores.append(RequestScores(names, cos, rng.gamma(1.0, 2.0, size=t) - 0.5))
    return scores, emb, list(hashes), examples


@pytest.mark.parametrize("exclude", [None, 0, 3])
@pytest.mark.parametrize("block_rows", [1, 97, 1024])
def test_knn_blocks_equal_the_whole_matrix(exclude, block_rows):
    scores, query, hashes, examples = random_problem(seed=28)
    new = knn_by_label(query, hashes, examples, exclude, block_rows=block_rows)
    old = reference_knn_by_label(query, hashes, examples, exclude)
    assert list(new) == list(old)
    for label in old:
        for a, b in zip(new[label], old[label]):
            if block_rows >= len(query):  # one block: bit for bit
                np.testing.assert_array_equal(a, b)
            else:
                np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
                np.testing.assert_allclose(a, b, rtol=0, atol=FLOAT32_UNIT)
    if exclude is not None:
        assert np.isnan(new["only_once"][0]).all() == (examples.folds[-1] == exclude)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("exclude", [None, 2])
def test_feature_arrays_equal_the_per_tool_loop(seed, exclude):
    scores, query, hashes, examples = random_problem(seed)
    new = feature_arrays(scores, query, hashes, examples, exclude)
    old = reference_feature_arrays(scores, query, hashes, examples, exclude)
    for a, b in zip(new, old):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    tool_x, mask, _ = new
    assert (~mask.any(axis=1)).any() and tool_x[..., 8].any() and not tool_x[..., 8].all()


def test_feature_arrays_in_several_blocks(monkeypatch):
    scores, query, hashes, examples = random_problem(seed=4)
    monkeypatch.setattr(decision_features, "KNN_BLOCK", 97)
    new = feature_arrays(scores, query, hashes, examples, 1)
    old = reference_feature_arrays(scores, query, hashes, examples, 1)
    np.testing.assert_array_equal(new[1], old[1])
    np.testing.assert_array_equal(new[0][..., 8], old[0][..., 8])  # seen: exactly the same tools
    np.testing.assert_array_equal(new[0][..., :5], old[0][..., :5])  # the router features do not change
    np.testing.assert_allclose(new[0], old[0], rtol=0, atol=2 * FLOAT32_UNIT)  # knn_gap: a difference of two
    np.testing.assert_allclose(new[2], old[2], rtol=0, atol=FLOAT32_UNIT)


def test_a_query_outside_the_examples_and_empty_cases():
    scores, query, hashes, examples = random_problem(seed=5, n=60)
    fresh = ["f" * 64] * 7  # texts no example has
    new = knn_by_label(query[:7], fresh, examples, 1, block_rows=3)
    old = reference_knn_by_label(query[:7], fresh, examples, 1)
    for label in old:
        np.testing.assert_array_equal(np.isnan(new[label][0]), np.isnan(old[label][0]))
        np.testing.assert_allclose(new[label][0], old[label][0], rtol=0, atol=FLOAT32_UNIT)
    assert knn_by_label(query[:0], [], examples, None) == {}
    empty = Examples(np.zeros((0, query.shape[1])), np.array([], dtype=object), np.array([], dtype=object),
                     np.array([], dtype=int))
    for a, b in zip(feature_arrays(scores[:9], query[:9], hashes[:9], empty, None),
                    reference_feature_arrays(scores[:9], query[:9], hashes[:9], empty, None)):
        np.testing.assert_array_equal(a, b)


def test_memory_grows_with_the_examples_not_their_square():
    import tracemalloc

    n, dims = 3000, 8
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(n, dims))
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    hashes = [f"{k % 2000:064x}" for k in range(n)]
    examples = Examples(emb, np.array([f"t{k % 40}" for k in range(n)], dtype=object), np.array(hashes, dtype=object),
                        np.arange(n) % 5)
    tracemalloc.start()
    try:
        knn_by_label(emb, hashes, examples, 2, block_rows=256)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < n * n * 8 / 2  # the whole float64 matrix alone is 72 MB; 256 rows at a time use about 19


@pytest.mark.parametrize("exclude", [0, 3])
def test_the_held_out_folds_labels_never_reach_the_features(exclude):
    """Leakage: with fold k excluded, no feature of any request may depend on the labels of fold k's examples
    (the held-out requests' own labels among them). Relabelling them, shuffled among themselves or all to one
    new label, leaves every array bit for bit as it was. A kernel-density kNN feature once tried failed
    this way: a tool that is someone's label only in the held-out fold got a different value from a tool
    nobody labelled, and cross-fitted accuracy on BFCL live read 95.3% instead of the 93.4% it was."""
    scores, query, hashes, examples = random_problem(11)
    before = feature_arrays(scores, query, hashes, examples, exclude)
    held = examples.folds == exclude
    rng = np.random.default_rng(5)
    for relabelled in (rng.permutation(examples.labels[held]), np.full(held.sum(), "someone_else", dtype=object)):
        labels = examples.labels.copy()
        labels[held] = relabelled
        after = feature_arrays(scores, query, hashes, Examples(examples.embeddings, labels, examples.text_hashes,
                                                               examples.folds), exclude)
        for a, b in zip(before, after):
            np.testing.assert_array_equal(a, b)
