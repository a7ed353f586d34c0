"""Fitting a router's 'none' cut-off from labelled requests: a deterministic hash split, the cut-off that
maximises accuracy on one half, and its accuracy on the other.

A router with a cut-off ``t`` picks 'none' when its best tool scores below ``t``, else its best tool. Given,
per request, the best tool's score, whether that tool is the label, and whether the label is 'none', the
accuracy at every possible cut-off is a cumulative sum over the requests sorted by score.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np

FIT, CONFIRM = "fit", "confirm"


def split_half(request_id: str, salt: str) -> str:
    """'fit' or 'confirm': the first byte of sha256(salt + ':' + id), even = fit. Deterministic, and
    independent of the order and number of the other requests."""
    return FIT if hashlib.sha256(f"{salt}:{request_id}".encode()).digest()[0] % 2 == 0 else CONFIRM


@dataclass(frozen=True)
class ScoredRequest:
    """What the cut-off needs of one request under one router."""

    best_score: float
    """The best offered tool's score; -inf when no tool is offered (the answer is 'none' whatever the cut-off)."""
    best_is_label: bool
    """The best tool is the expected label."""
    label_is_none: bool


def correct_at(requests: Sequence[ScoredRequest], threshold: float) -> tuple[int, int]:
    """(right answers, abstentions) with the cut-off ``threshold``."""
    right = abstained = 0
    for r in requests:
        if r.best_score < threshold or r.best_score == float("-inf"):
            abstained += 1
            right += r.label_is_none
        else:
            right += r.best_is_label and not r.label_is_none
    return right, abstained


def fit_threshold(requests: Sequence[ScoredRequest]) -> float:
    """The cut-off with the most right answers (the fewest abstentions among equals), placed halfway between
    the two score values it separates; -inf when never abstaining is best."""
    finite = [r for r in requests if np.isfinite(r.best_score)]
    if not finite:
        return float("-inf")
    s = np.array([r.best_score for r in finite], dtype=np.float64)
    values = np.unique(s)  # ascending
    none = np.array([r.label_is_none for r in finite], dtype=np.int64)
    tool_right = np.array([r.best_is_label and not r.label_is_none for r in finite], dtype=np.int64)
    # candidate j abstains on every score < values[j] (j = len(values): on all of them)
    position = np.searchsorted(values, s)  # index of each request's value
    none_at = np.bincount(position, weights=none, minlength=len(values))
    right_at = np.bincount(position, weights=tool_right, minlength=len(values))
    none_below = np.concatenate(([0.0], np.cumsum(none_at)))
    right_from = np.concatenate((np.cumsum(right_at[::-1])[::-1], [0.0]))
    accuracy = none_below + right_from
    best = int(np.argmax(accuracy))  # first maximiser: the fewest abstentions
    if best == 0:
        return float("-inf")
    if best == len(values):
        return float(values[-1] + max(1e-9, abs(values[-1]) * 1e-9))
    return float((values[best - 1] + values[best]) / 2.0)
