"""The embedding probe of the trained decision model (tasks/selectors/decision_models/embedding_probe.py), its cross-fitting
in training (``FoldProbes``), its features (``decision_features``) and how the model file keeps it.
Constructed embeddings (no MiniLM): the fast tier."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from schemas.catalogue import NONE_LABEL
from schemas.decision_model import ProbeWeights
from tasks.selectors.decision_models.decision_features import (
    NONE_FEATURES,
    TOOL_FEATURES,
    Examples,
    ProbeScores,
    RequestScores,
    as_unseen,
    feature_arrays,
)
from tasks.selectors.decision_models.embedding_probe import Probe, fit_probe, fit_probes
from tasks.selectors.decision_models.train_decision_model import FoldProbes

DIM = 24


def clusters(n: int, labels: tuple[str, ...], spread: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit embeddings around one centre per label; the label of each."""
    rng = np.random.default_rng(seed)
    names = np.array([labels[i % len(labels)] for i in range(n)], dtype=object)
    centres = np.eye(DIM)[: len(labels)]
    x = np.array([centres[labels.index(name)] + spread * rng.normal(size=DIM) for name in names])
    return x / np.linalg.norm(x, axis=1, keepdims=True), names


def test_a_probe_learns_labels_it_can_tell_apart_and_gives_probabilities():
    x, names = clusters(300, ("refund", "track", NONE_LABEL), 0.3, 1)
    probe = fit_probe(x[:200], names[:200])
    assert probe is not None and probe.classes == tuple(sorted({"refund", "track", NONE_LABEL}))
    log_p = probe.log_proba(x[200:])
    np.testing.assert_allclose(np.exp(log_p).sum(axis=1), 1.0, atol=1e-12)
    picked = np.array(probe.classes, dtype=object)[log_p.argmax(axis=1)]
    assert (picked == names[200:]).mean() > 0.95


def test_one_label_gives_no_probe():
    x, names = clusters(20, ("refund",), 0.3, 2)
    assert fit_probe(x, names) is None


def test_the_model_file_keeps_the_probe_exactly():
    x, names = clusters(120, ("a", "b", "c"), 0.5, 3)
    probe = fit_probe(x, names)
    kept = ProbeWeights.model_validate_json(ProbeWeights(**probe.encoded()).model_dump_json())
    again = Probe.decoded(**kept.model_dump())
    np.testing.assert_array_equal(again.log_proba(x), probe.log_proba(x))


def test_a_requests_probe_features_never_come_from_a_probe_that_saw_its_fold():
    """FoldProbes: model k sees fold j (j != k) through the probe fitted without folds k and j, its held-out
    fold k through the one without k; the full model sees fold j through the one without j. Recorded by
    swapping the fit for one that remembers which folds it was given."""
    fold = np.arange(50) % 5
    x, names = clusters(50, ("a", "b"), 0.5, 4)
    probes = FoldProbes(x, names, fold, np.ones(50, dtype=bool))
    seen: dict[frozenset[int], set[int]] = {}
    real = probes.probe

    def recording(without: frozenset[int]):
        seen[without] = set(fold[~np.isin(fold, list(without))].tolist())
        return real(without)

    probes.probe = recording  # type: ignore[method-assign]
    for exclude in (None, 0, 3):
        probes.scores(exclude)
    for without, folds_used in seen.items():
        assert not folds_used & without
    assert set(seen) == ({frozenset({j}) for j in range(5)}
                         | {frozenset({k, j}) for k in (0, 3) for j in range(5)})


def test_the_probes_fitted_at_once_on_several_cores_are_those_fitted_one_by_one():
    """``fit_cross_fitted`` fits every probe a training asks for, two at a time, before it asks: each is the
    probe ``scores`` and ``probe`` fit alone, bit for bit, and asking fits nothing more."""
    fold = np.arange(90) % 5
    x, names = clusters(90, ("a", "b", "c", NONE_LABEL), 0.6, 7)
    usable = np.arange(90) % 7 != 0
    alone = FoldProbes(x, names, fold, usable)
    at_once = FoldProbes(x, names, fold, usable)
    at_once.fit_cross_fitted(5)
    fitted = dict(at_once._fitted)
    for exclude in (None, *range(5)):
        np.testing.assert_array_equal(at_once.scores(exclude).log_proba, alone.scores(exclude).log_proba)
    for without in (frozenset(), *(frozenset({k}) for k in range(5))):
        assert at_once.probe(without).encoded() == alone.probe(without).encoded()
    assert at_once._fitted == fitted and set(alone._fitted) == set(fitted)  # nothing fitted after, none missing
    data = [(x[fold != k], names[fold != k]) for k in range(3)]
    assert [p.encoded() for p in fit_probes(data, workers=2)] == [fit_probe(*item).encoded() for item in data]


def test_random_labels_stay_at_chance_under_cross_fitting():
    """No signal in the embeddings: a probe that had seen a request's fold would read its label back (in
    sample, a probe of 4 labels on 64 dimensions fits much of the noise of 200 requests); the cross-fitted
    features do not."""
    rng = np.random.default_rng(5)
    n, labels = 200, ("a", "b", "c", "d")
    x = rng.normal(size=(n, 64))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    names = np.array([labels[i] for i in rng.integers(0, 4, size=n)], dtype=object)
    fold = rng.integers(0, 5, size=n)
    probes = FoldProbes(x, names, fold, np.ones(n, dtype=bool))
    for exclude in (None, 2):
        scores = probes.scores(exclude)
        picked = np.array(scores.labels, dtype=object)[np.nanargmax(scores.log_proba, axis=1)]
        assert (picked == names).mean() < 0.36  # chance: 0.25
    in_sample = fit_probe(x, names)
    assert (np.array(in_sample.classes, dtype=object)[in_sample.log_proba(x).argmax(axis=1)] == names).mean() > 0.6


def test_probe_features_are_example_features():
    """``probe`` / ``probe_gap`` / ``probe_seen`` per offered tool that is one of the probe's labels (0 for
    one that is not), ``probe_none`` only where some offered tool is; the transfer copies zero them all."""
    tools = ("refund", "track", "unknown_tool")
    scores = [RequestScores(tools, np.array([0.5, 0.4, 0.3]), np.array([1.0, 0.5, 0.2])),
              RequestScores(("unknown_tool",), np.array([0.3]), np.array([0.2]))]
    query = np.eye(DIM)[:2]
    log_p = np.log(np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]]))
    probe = ProbeScores(("refund", "track", NONE_LABEL), log_p)
    examples = Examples(np.eye(DIM)[2:4], np.array(["refund", "track"], dtype=object),
                        np.array(["x", "y"], dtype=object), np.array([0, 1]))
    tool_x, mask, none_x = feature_arrays(scores, query, ["q1", "q2"], examples, None, probe)
    p, gap, seen = (TOOL_FEATURES.index(f) for f in ("probe", "probe_gap", "probe_seen"))
    np.testing.assert_allclose(tool_x[0, :, p], [np.log(0.6), np.log(0.3), 0.0])
    np.testing.assert_allclose(tool_x[0, :, gap], [0.0, np.log(0.3) - np.log(0.6), 0.0])
    assert tool_x[0, :, seen].tolist() == [1.0, 1.0, 0.0]
    none = NONE_FEATURES.index("probe_none")
    assert none_x[0, none] == pytest.approx(np.log(0.1))
    assert none_x[1, none] == 0.0 and not tool_x[1, :, [p, gap, seen]].any()  # no offered tool is a label
    copies, copied_none = as_unseen(tool_x, mask, none_x)
    assert not copies[..., [p, gap, seen]].any() and not copied_none[:, none].any()


def test_a_probe_whose_weights_do_not_fit_its_labels_is_refused_when_the_file_is_read():
    x, names = clusters(60, ("a", "b"), 0.5, 6)
    kept = fit_probe(x, names).encoded()
    with pytest.raises(ValueError, match="needs 192 bytes of weights and 2 biases; the file has 188 and 2"):
        ProbeWeights(**{**kept, "weights_f32": base64.b64encode(b"\0" * 188).decode()})
    with pytest.raises(ValueError, match="not base64"):
        ProbeWeights(**{**kept, "weights_f32": "%%%"})
