"""A selector whose probabilities are tempered: each Selection's probabilities raised to ``1 / temperature`` and
renormalised (``tasks/stats/calibration.tempered_probabilities``), its confidence that of its pick, which never
changes. It gives the trained decision model the ``temperature`` option the lexical and embedding routers have
in their softmax, so ``tooleval fit`` can set a fitted temperature on any offline router."""

from __future__ import annotations

from typing import Any, Sequence

from schemas.selection.rows import Selection
from tasks.selectors.base import SelectionInput, Selector


def parse_temperature(value: Any) -> float:
    """A ``temperature`` option as a float: a positive number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"temperature must be a number > 0, got {value!r}")
    return float(value)


class TemperedSelector:
    """``inner``'s selections with tempered probabilities; every other attribute is ``inner``'s."""

    def __init__(self, inner: Selector, temperature: float) -> None:
        self.inner = inner
        self.temperature = parse_temperature(temperature)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def select(self, batch: Sequence[SelectionInput]) -> list[Selection]:
        from tasks.stats.calibration import tempered_probabilities  # numpy: only for arms that use it

        selections = self.inner.select(batch)
        for selection in selections:
            if selection.chosen is None or not selection.probabilities:
                continue
            labels = list(selection.probabilities)
            (row,) = tempered_probabilities([list(selection.probabilities.values())], self.temperature).tolist()
            selection.probabilities = dict(zip(labels, row))
            selection.confidence = selection.probabilities[selection.chosen]
        return selections
