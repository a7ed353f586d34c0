"""Transfer training (``with_unseen_copies``, ``fit_with_transfer``): a model that learned each request again
as if its tools had no labelled examples scores a tool it has no examples for on cosine and BM25, where the
model trained without the copies abstains for lack of examples. Constructed features (no MiniLM): the real ``feature_arrays``, the real
fit."""

from __future__ import annotations

import numpy as np
from schemas.catalogue import NONE_LABEL
from tasks.selectors.decision_models.conditional_logit import NONE_INDEX, fit_logit, softmax, utilities
from tasks.selectors.decision_models.decision_features import (
    NO_EXAMPLES_NONE_FEATURES,
    NONE_FEATURES,
    TOOL_FEATURES,
    UNSEEN_TOOL_FEATURES,
    Examples,
    RequestScores,
    as_unseen,
    feature_arrays_with_nearest,
)
from tasks.selectors.decision_models.train_decision_model import TRANSFER_FREE, fit_with_transfer, with_unseen_copies

TOOLS = ("refund", "track", "reset", "cancel")
DIM = 16
COS_LIFT, BM25_LIFT = 0.05, 0.5


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def training_set(seed: int = 7) -> tuple[list[RequestScores], np.ndarray, list[str], Examples, np.ndarray]:
    """120 requests in five clusters (four tools and 'none'): the right tool's cosine and BM25 a little above
    the others', the nearest examples of its own label much closer (kNN is what tells them apart here)."""
    rng = np.random.default_rng(seed)
    centres = np.eye(DIM)[:5]
    labels = [TOOLS[i % 5] if i % 5 < 4 else NONE_LABEL for i in range(120)]
    query = _unit(np.array([centres[(TOOLS + (NONE_LABEL,)).index(lab)] + 0.25 * rng.normal(size=DIM)
                            for lab in labels]))
    scores = []
    for lab in labels:
        cos = 0.35 + 0.05 * rng.normal(size=len(TOOLS))
        bm25 = 1.5 + 0.3 * rng.normal(size=len(TOOLS))
        if lab != NONE_LABEL:
            cos[TOOLS.index(lab)] += COS_LIFT
            bm25[TOOLS.index(lab)] += BM25_LIFT
        scores.append(RequestScores(TOOLS, cos, bm25))
    hashes = [f"h{i}" for i in range(len(labels))]
    examples = Examples(query, np.asarray(labels, dtype=object), np.asarray(hashes, dtype=object),
                        np.arange(len(labels)) % 5)
    y = np.array([NONE_INDEX if lab == NONE_LABEL else TOOLS.index(lab) for lab in labels])
    return scores, query, hashes, examples, y


def fitted(weight: float) -> tuple[np.ndarray, np.ndarray]:
    scores, query, hashes, examples, y = training_set()
    tool_x, mask, none_x, _ = feature_arrays_with_nearest(scores, query, hashes, examples, None)
    return fit_with_transfer(tool_x, mask, none_x, y, True, 1e-3, weight)


def out_of_domain_pick(w_tool: np.ndarray, w_none: np.ndarray) -> tuple[str, float]:
    """A request far from every example, offered two tools the model has no example of: one clearly the
    best by cosine and BM25."""
    *_, examples, _ = training_set()
    scores = [RequestScores(("book_flight", "get_weather"), np.array([0.47, 0.35]), np.array([2.2, 1.5]))]
    query = _unit(np.eye(DIM)[9:10])  # orthogonal to every cluster
    tool_x, mask, none_x, nearest = feature_arrays_with_nearest(scores, query, ["far"], examples, None)
    assert not tool_x[0, :, TOOL_FEATURES.index("seen")].any()  # the tools are unseen
    assert nearest[0] < 0.5  # and the request is far from every example
    p = softmax(utilities(tool_x, mask, none_x, w_tool, w_none))[0]
    names = ["book_flight", "get_weather", NONE_LABEL]
    return names[int(np.argmax(p))], float(p[0])


def test_the_copies_are_the_rows_with_their_example_features_zeroed():
    scores, query, hashes, examples, y = training_set()
    tool_x, mask, none_x, _ = feature_arrays_with_nearest(scores, query, hashes, examples, None)
    t, m, n, labels, weights = with_unseen_copies(tool_x, mask, none_x, y, 0.5)
    rows = len(y)
    assert t.shape[0] == m.shape[0] == n.shape[0] == len(labels) == 2 * rows
    assert np.array_equal(t[:rows], tool_x) and np.array_equal(labels[rows:], y)
    assert weights.tolist() == [1.0] * rows + [0.5] * rows
    knn = [TOOL_FEATURES.index(f) for f in ("knn1", "knn3", "knn_gap", "seen")]
    assert not t[rows:, :, knn].any() and tool_x[:, :, knn].any()
    kept = [TOOL_FEATURES.index(f) for f in ("cos", "cos_gap", "cos_z", "bm25_rel", "bm25_log")]
    assert np.array_equal(t[rows:, :, kept], tool_x[:, :, kept])
    knn1_max = NONE_FEATURES.index("knn1_max")
    assert not n[rows:, knn1_max].any() and none_x[:, knn1_max].any()
    as_they_were = [NONE_FEATURES.index(f) for f in ("bias", "cos_max", "cos_margin", "bm25_log_max", "none_knn1",
                                                     "none_knn3")]  # the model's own 'none' examples stay
    assert np.array_equal(n[rows:][:, as_they_were], none_x[:, as_they_were])
    # the repeats: a copy's tools are all unseen, so they carry the cosine and BM25 features again
    for name, base in UNSEEN_TOOL_FEATURES.items():
        assert np.array_equal(t[rows:, :, TOOL_FEATURES.index(name)], tool_x[:, :, TOOL_FEATURES.index(base)])
        assert not tool_x[:, :, TOOL_FEATURES.index(name)].any()  # every original tool has examples here
    for name, base in NO_EXAMPLES_NONE_FEATURES.items():
        assert np.array_equal(n[rows:, NONE_FEATURES.index(name)], none_x[:, NONE_FEATURES.index(base)])
        assert not none_x[:, NONE_FEATURES.index(name)].any()
    assert with_unseen_copies(tool_x, mask, none_x, y, 0.0)[4] is None  # weight 0: the rows alone
    assert np.array_equal(as_unseen(tool_x, mask, none_x)[0], t[rows:])


def test_a_model_with_transfer_copies_scores_an_unseen_tool_above_none_where_the_old_one_abstained():
    old_pick, old_p = out_of_domain_pick(*fitted(0.0))
    new_pick, new_p = out_of_domain_pick(*fitted(1.0))
    assert old_pick == NONE_LABEL  # without the copies: no examples -> 'none'
    assert new_pick == "book_flight" and new_p > 0.5 > old_p


def test_the_copies_leave_the_weights_of_seen_tools_as_they_were():
    old, new = fitted(0.0), fitted(1.0)
    held = ~TRANSFER_FREE
    assert np.array_equal(np.r_[old[0], old[1]][held], np.r_[new[0], new[1]][held])
    assert np.abs(np.r_[new[0], new[1]][TRANSFER_FREE]).sum() > 0.5  # and the unseen ones learned something


def test_row_weights_of_one_are_the_plain_fit():
    scores, query, hashes, examples, y = training_set()
    tool_x, mask, none_x, _ = feature_arrays_with_nearest(scores, query, hashes, examples, None)
    plain = fit_logit(tool_x, mask, none_x, y, True)
    ones = fit_logit(tool_x, mask, none_x, y, True, row_weights=np.ones(len(y)))
    assert np.allclose(plain[0], ones[0]) and np.allclose(plain[1], ones[1])
    doubled = fit_logit(np.concatenate([tool_x, tool_x]), np.concatenate([mask, mask]),
                        np.concatenate([none_x, none_x]), np.concatenate([y, y]), True)
    assert np.allclose(doubled[0], plain[0], atol=1e-4)  # a row twice at weight 1 = once: the mean is the same
