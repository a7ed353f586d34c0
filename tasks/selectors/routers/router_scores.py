"""What both offline routers share: tool names as words, scores turned into probabilities and picks,
``select`` itself (``ScoreRouter``: a router only says how it scores the offered tools), and memos of what
they derive from the offered tools (``IdentityMemo``).
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable, Generic, Sequence, TypeVar

import numpy as np

from schemas.catalogue import NONE_LABEL
from schemas.selection.rows import Selection
from tasks.selectors.base import SelectionInput
from tasks.selectors.routers.conversation import (CONTEXT_OPTION, DEFAULT_CONTEXT_TURNS, conversation_text,
                                                  parse_context_turns)
from tasks.selectors.routers.router_setup import parse_threshold

K = TypeVar("K")
V = TypeVar("V")

_NAME_SEPARATORS = re.compile(r"[_.\-/:\s]+")
CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def tool_name_words(name: str) -> str:
    """A tool name as words: ``get_orderStatus`` / ``orders.getStatus`` -> ``get order status``."""
    spaced = CAMEL_BOUNDARY.sub(" ", _NAME_SEPARATORS.sub(" ", name))
    return " ".join(spaced.split()).lower()


class IdentityMemo(Generic[K, V]):
    """``memo(obj)`` is ``compute(obj)``, computed once per object: the harness hands every request of one (arm,
    seed) the same ToolSpec and tuple objects, so an ``is`` check beats hashing their content on every request.
    The object is held beside its value, so its id cannot be reused by another object while the entry lives;
    the memo is emptied when full."""

    def __init__(self, compute: Callable[[K], V], limit: int) -> None:
        self._compute = compute
        self._limit = limit
        self._entries: dict[int, tuple[K, V]] = {}

    def __call__(self, obj: K) -> V:
        entry = self._entries.get(id(obj))
        if entry is not None and entry[0] is obj:
            return entry[1]
        value = self._compute(obj)
        if len(self._entries) >= self._limit:
            self._entries.clear()
        self._entries[id(obj)] = (obj, value)
        return value


def abstain_softmax(scores: np.ndarray, threshold: float, temperature: float) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities over the offered tools plus "none", and the index of the pick, for a batch.

    ``scores`` is (requests x tools) in offered order. "none" is appended as the last column with the
    score ``threshold``; probabilities are ``softmax(score / temperature)`` per row. The pick is the
    argmax of the scores, ties going to the earliest column: an earlier offered tool beats a later one,
    and any tool scoring exactly the threshold beats "none" (so "none" is chosen only when the best tool
    scores *below* the threshold).
    """
    rows = scores.shape[0]
    full = np.empty((rows, scores.shape[1] + 1), dtype=np.float64)
    full[:, :-1] = scores
    full[:, -1] = threshold
    picks = full.argmax(axis=1)
    shifted = (full - full.max(axis=1, keepdims=True)) / temperature
    np.exp(shifted, out=shifted)
    shifted /= shifted.sum(axis=1, keepdims=True)
    return shifted, picks


def selections_from_scores(
    batch: Sequence[SelectionInput],
    scores: Sequence[np.ndarray | None],
    *,
    threshold: float,
    temperature: float,
    model_id: str,
    latency_ms: float = 0.0,
) -> list[Selection]:
    """One ``Selection`` per input from its score vector (offered order); ``None`` = empty request,
    an empty vector = no tools offered.

    Inputs offered the same number of tools are softmaxed together (one numpy call per tool count).
    An empty request picks "none" with probability 1: there is nothing a tool could be chosen for.
    ``latency_ms`` is put on every Selection (callers that time the whole batch set it afterwards).
    """
    out: list[Selection | None] = [None] * len(batch)
    by_width: dict[int, list[int]] = {}
    for i, row in enumerate(scores):
        if row is None or len(row) == 0:
            labels = [tool.name for tool in batch[i].tools]
            probabilities = dict.fromkeys(labels, 0.0)
            probabilities[NONE_LABEL] = 1.0
            out[i] = Selection(
                request_id=batch[i].request_id,
                chosen=NONE_LABEL,
                confidence=1.0,
                probabilities=probabilities,
                latency_ms=latency_ms,
                served_model_id=model_id,
                detail="empty request text" if row is None else "no tools offered",
            )
        else:
            by_width.setdefault(len(row), []).append(i)
    for members in by_width.values():
        probs, picks = abstain_softmax(np.stack([scores[i] for i in members]), threshold, temperature)
        for i, prob_row, pick in zip(members, probs.tolist(), picks.tolist()):
            labels = [tool.name for tool in batch[i].tools]
            labels.append(NONE_LABEL)
            out[i] = Selection(
                request_id=batch[i].request_id,
                chosen=labels[pick],
                confidence=prob_row[pick],
                probabilities=dict(zip(labels, prob_row)),
                latency_ms=latency_ms,
                served_model_id=model_id,
            )
    return out  # type: ignore[return-value]


class ScoreRouter:
    """Base of the offline routers: ``select`` turns the subclass's ``scores`` into Selections and times
    the batch; the subclass sets ``model_id`` and reads its options with ``read_options``."""

    model_id: str
    temperature: float
    abstain_threshold: float
    context_turns: int

    def read_options(self, options: dict[str, Any], temperature: float, abstain_threshold: float) -> None:
        """Take the options every offline router has (``temperature``, ``abstain_threshold``,
        ``context_turns``) out of ``options``, with these defaults."""
        self.temperature = float(options.pop("temperature", temperature))
        self.abstain_threshold = parse_threshold(options.pop("abstain_threshold", abstain_threshold))
        self.context_turns = parse_context_turns(options.pop(CONTEXT_OPTION, DEFAULT_CONTEXT_TURNS))
        if self.temperature <= 0:
            raise ValueError("temperature must be > 0")

    def request_text(self, item: SelectionInput) -> str:
        """The text scored for a request: the last user turn after ``context_turns`` earlier turns."""
        return conversation_text(item.messages, self.context_turns)

    def scores(self, batch: Sequence[SelectionInput]) -> list[np.ndarray | None]:
        """A score per offered tool (offered order) for each input; ``None`` for an empty request."""
        raise NotImplementedError

    def select(self, batch: Sequence[SelectionInput]) -> list[Selection]:
        """One Selection per input, in order; latency is the batch's wall time split evenly."""
        if not batch:
            return []
        started = time.perf_counter()
        selections = selections_from_scores(
            batch,
            self.scores(batch),
            threshold=self.abstain_threshold,
            temperature=self.temperature,
            model_id=self.model_id,
        )
        latency_ms = (time.perf_counter() - started) * 1000.0 / len(batch)
        for selection in selections:
            selection.latency_ms = latency_ms
        return selections
