"""The embedding probe of the trained decision model: a multinomial logistic regression from a request's
MiniLM embedding to its label (the tools and 'none' the model learned from), fitted on the labelled examples.

The kNN features say how close a request is to a tool's examples; they cannot say which directions of the
embedding tell two sibling tools apart, since every example of both is close. A linear probe learns those
directions from all the examples at once. Its log-probability of each offered tool, and of 'none', are
features of the conditional logit (``decision_features.py``: ``probe``, ``probe_gap``, ``probe_seen``,
``probe_none``). The probe raised the cross-fitted accuracy on every public bench set it was measured on
(docs/measured/decision-models.md, "The embedding probe").

Fitted by scikit-learn's ``LogisticRegression`` (L-BFGS) on sum(negative log-likelihood) + |W|^2 / (2 C), the
intercepts unpenalised, so a larger ``C`` fits the examples more closely. The probe is an example feature:
``tooleval train`` cross-fits it (a request's probe features come from a probe that never saw its fold,
``train_decision_model.py``), and the model file keeps each fold model's probe and the full model's, as
float32 weights.
"""

from __future__ import annotations

import base64
import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np


PROBE_C = 10.0
"""Inverse L2 strength of the probe (sum of the log-likelihoods + |W|^2 / (2 C))."""
MAX_ITERATIONS = 300
TOLERANCE = 1e-6
"""L-BFGS stops when no gradient component exceeds this (scikit-learn's default, 1e-4, stops short of the
optimum by up to 0.1 in a log-probability)."""


@dataclass(frozen=True)
class Probe:
    """Labels (in column order), their weights (labels x dimensions, float32) and intercepts."""

    classes: tuple[str, ...]
    weights: np.ndarray
    bias: np.ndarray

    def log_proba(self, x: np.ndarray) -> np.ndarray:
        """requests x labels: log P(label | embedding)."""
        z = np.asarray(x, dtype=np.float64) @ self.weights.astype(np.float64).T + self.bias
        top = z.max(axis=1, keepdims=True)
        return z - top - np.log(np.exp(z - top).sum(axis=1, keepdims=True))

    def encoded(self) -> dict:
        """The probe as the model file keeps it (``schemas.decision_model.ProbeWeights``)."""
        return {"classes": list(self.classes), "dims": int(self.weights.shape[1]),
                "weights_f32": base64.b64encode(self.weights.astype("<f4").tobytes()).decode(),
                "bias": self.bias.tolist()}

    @classmethod
    def decoded(cls, classes: Sequence[str], dims: int, weights_f32: str, bias: Sequence[float]) -> Probe:
        weights = np.frombuffer(base64.b64decode(weights_f32), dtype="<f4").reshape(len(classes), dims)
        return cls(tuple(classes), weights, np.asarray(bias, dtype=np.float64))


def fit_probe(x: np.ndarray, labels: Sequence[str], c: float = PROBE_C) -> Probe | None:
    """The probe of ``labels`` on embeddings ``x`` (requests x dimensions); None with fewer than two labels."""
    return fit_probes([(x, labels)], c)[0]


def fit_probes(data: Sequence[tuple[np.ndarray, Sequence[str]]], c: float = PROBE_C, workers: int = 1
               ) -> list[Probe | None]:
    """``fit_probe`` of each (embeddings, labels), ``workers`` fits at a time in threads. Every fit runs on
    one BLAS and one OpenMP thread whatever the number of workers, so each probe is the one a fit alone
    gives, bit for bit; the fits only share the cores."""
    from sklearn.exceptions import ConvergenceWarning  # training only: scoring with a probe never loads it
    from sklearn.linear_model import LogisticRegression  # imported before the limits: its BLAS is limited too
    from threadpoolctl import threadpool_limits

    def one(item: tuple[np.ndarray, Sequence[str]]) -> Probe | None:
        with threadpool_limits(limits=1, user_api="openmp"):  # OpenMP's thread count is the calling thread's
            return _fitted(LogisticRegression, *item, c)

    # one BLAS thread for the process and one warnings filter, set here and not per fit: neither is the
    # calling thread's own, so a fit restoring them would undo them under another fit still running
    with threadpool_limits(limits=1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a fit stopped at MAX_ITERATIONS is kept as it stands
        if workers <= 1 or len(data) <= 1:
            return [one(item) for item in data]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(workers, len(data))) as pool:
            return list(pool.map(one, data))


def _fitted(logistic_regression: type, x: np.ndarray, labels: Sequence[str], c: float) -> Probe | None:
    classes, y = np.unique(np.asarray(labels, dtype=str), return_inverse=True)
    if len(classes) < 2:
        return None
    binary = len(classes) == 2
    # Two labels: scikit-learn fits one row v (label 1 against label 0); the two-row softmax with the same
    # penalty is rows -v/2 and v/2, whose penalty |v|^2 / (4 C) is the one-row fit's at 2 C.
    fitted = logistic_regression(C=2 * c if binary else c, tol=TOLERANCE, max_iter=MAX_ITERATIONS)
    fitted.fit(np.asarray(x, dtype=np.float64), y.reshape(-1))
    weights, bias = fitted.coef_, fitted.intercept_
    if binary:
        weights, bias = np.vstack([-weights / 2, weights / 2]), np.concatenate([-bias / 2, bias / 2])
    return Probe(tuple(str(name) for name in classes), np.ascontiguousarray(weights, dtype=np.float32),
                 bias.astype(np.float64))
