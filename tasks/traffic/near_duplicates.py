"""Exact and near-duplicate requests.

Two requests are the same when their normalised conversations are equal (case, spacing, digits and
punctuation ignored); near-duplicates when the Jaccard similarity of their character 4-gram sets reaches a
threshold (0.7 by default: a typo, a changed order number or an added "please" stay near; a different
request with the same topic does not). In a short text one typo moves several 4-grams at once ("cfofee"
for "coffee" takes "skip next coffee box pls" to 0.697), so a text within ``TYPO_MARGIN`` below the
threshold is near too when at most ``typo_edits`` characters (insertions, deletions, substitutions,
swaps of neighbours) separate the two normalised texts.
"""

from __future__ import annotations

import re
import zlib
from typing import Iterable, Sequence

import numpy as np

from schemas.taskset import Message

SHINGLE = 4
_NON_WORD = re.compile(r"[^\w\[\]]+")
_DIGITS = re.compile(r"\d+")


def conversation_text(messages: Sequence[Message]) -> str:
    """The whole conversation as one string (earlier turns first): what duplicates are judged on."""
    return " || ".join(f"{m.role}: {m.content}" for m in messages)


def normalise(text: str) -> str:
    text = _DIGITS.sub("0", text.lower())
    return " ".join(_NON_WORD.sub(" ", text).split())


def shingles(text: str) -> frozenset[int]:
    norm = f" {normalise(text)} "
    if len(norm) <= SHINGLE:
        return frozenset({zlib.crc32(norm.encode())})
    return frozenset(zlib.crc32(norm[i:i + SHINGLE].encode()) for i in range(len(norm) - SHINGLE + 1))


TYPO_MARGIN = 0.2
"""How far below the threshold a pair is looked at as a possible typo."""


def typo_edits(length: int) -> int:
    """Character edits a text of ``length`` may take and still be the same request mistyped: 2, one more
    every 40 characters."""
    return 2 + length // 40


def edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal string alignment distance (a swap of neighbours is one edit), or ``limit + 1`` once it must
    exceed ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1]


class NearDuplicateIndex:
    """Texts seen so far; ``similar`` answers whether a new text is a near-duplicate of any of them.

    Exact Jaccard similarity against every indexed text at once: an inverted index from shingle to texts
    gives, with one ``bincount``, how many shingles each text shares with the query, and the sizes give
    the union. Fast for many thousands of texts (no sampling, no approximation).
    """

    MERGE_AT = 32
    """A shingle's recent additions are kept in a list and merged into its array past this length."""

    def __init__(self, threshold: float, texts: Iterable[str] = ()):
        self.threshold = threshold
        self._arrays: dict[int, np.ndarray] = {}
        self._recent: dict[int, list[int]] = {}
        self._sizes: list[int] = []
        self._normalised: list[str] = []
        for text in texts:
            self.add(text)

    def __len__(self) -> int:
        return len(self._sizes)

    def add(self, text: str) -> None:
        doc = len(self._sizes)
        found = shingles(text)
        self._sizes.append(len(found))
        self._normalised.append(normalise(text))
        for shingle in found:
            recent = self._recent.setdefault(shingle, [])
            recent.append(doc)
            if len(recent) >= self.MERGE_AT:
                self._merge(shingle)

    def _merge(self, shingle: int) -> None:
        recent = np.array(self._recent.pop(shingle, []), dtype=np.int64)
        old = self._arrays.get(shingle)
        self._arrays[shingle] = recent if old is None else np.concatenate([old, recent])

    def best(self, text: str) -> float:
        """The highest similarity of ``text`` to a text in the index (0 when none shares a shingle)."""
        scores = self._scores(text)
        return float(scores.max()) if scores is not None else 0.0

    def _scores(self, text: str) -> np.ndarray | None:
        """The similarity of ``text`` to every indexed text (None when none shares a shingle)."""
        found = shingles(text)
        arrays: list[np.ndarray] = []
        for shingle in found:
            if shingle in self._recent:
                self._merge(shingle)
            if shingle in self._arrays:
                arrays.append(self._arrays[shingle])
        if not arrays:
            return None
        shared = np.bincount(np.concatenate(arrays), minlength=len(self._sizes))
        union = len(found) + np.asarray(self._sizes, dtype=np.int64) - shared
        return shared / union

    def similar(self, text: str) -> bool:
        scores = self._scores(text)
        if scores is None:
            return False
        if scores.max() >= self.threshold:
            return True
        close = np.flatnonzero(scores >= self.threshold - TYPO_MARGIN)
        if not len(close):
            return False
        mine = normalise(text)
        limit = typo_edits(len(mine))
        return any(edit_distance(mine, self._normalised[i], limit) <= limit for i in close)
