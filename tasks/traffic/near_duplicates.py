"""Exact and near-duplicate requests.

Two requests are the same when their normalised conversations are equal (case, spacing, digits and
punctuation ignored); near-duplicates when the Jaccard similarity of their character 4-gram sets reaches a
threshold (0.7 by default: a typo, a changed order number or an added "please" stay near; a different
request with the same topic does not).
"""

from __future__ import annotations

import re
import zlib
from typing import Iterable, Sequence

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


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    if not a and not b:
        return 1.0
    common = len(a & b)
    return common / (len(a) + len(b) - common)


class NearDuplicateIndex:
    """Texts seen so far; ``similar`` answers whether a new text is a near-duplicate of any of them.

    Exact comparison of shingle sets, pruned by size (two sets can only reach similarity t when the
    smaller holds at least t times the larger's shingles), so it stays fast for a few thousand texts.
    """

    def __init__(self, threshold: float, texts: Iterable[str] = ()):
        self.threshold = threshold
        self._sets: list[frozenset[int]] = []
        self._by_size: dict[int, list[int]] = {}
        for text in texts:
            self.add(text)

    def __len__(self) -> int:
        return len(self._sets)

    def add(self, text: str) -> None:
        found = shingles(text)
        self._by_size.setdefault(len(found), []).append(len(self._sets))
        self._sets.append(found)

    def best(self, text: str) -> float:
        """The highest similarity of ``text`` to a text in the index (0 when there is none near)."""
        found = shingles(text)
        size, best = len(found), 0.0
        low, high = int(size * self.threshold), int(size / self.threshold) + 1
        for other_size, members in self._by_size.items():
            if other_size < low or other_size > high:
                continue
            for index in members:
                score = jaccard(found, self._sets[index])
                if score > best:
                    best = score
                    if best >= 1.0:
                        return best
        return best

    def similar(self, text: str) -> bool:
        return self.best(text) >= self.threshold
