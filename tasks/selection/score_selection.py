"""Score one selection against the expected label: the outcome taxonomy, never merged."""

from __future__ import annotations

from dataclasses import dataclass

from schemas.catalogue import NONE_LABEL
from schemas.selection.rows import Outcome, Selection


@dataclass(frozen=True)
class Score:
    outcome: Outcome
    correct: bool
    chosen: str | None
    pair: str | None
    detail: str | None


def score_selection(expected: str, selection: Selection, offered: set[str]) -> Score:
    """An invalid, empty or failed reply is its own outcome, never a correct 'none'."""
    hint, chosen, detail = selection.outcome_hint, selection.chosen, selection.detail
    if hint in ("error", "empty", "invalid"):
        return Score(hint, False, chosen, None, detail)
    if chosen is None:
        return Score("empty", False, None, None, detail or "no choice in the reply")
    if chosen != NONE_LABEL and chosen not in offered:
        return Score("invalid", False, chosen, None, detail or f"'{chosen}' is not an offered tool")
    if chosen == expected:
        return Score("correct", True, chosen, None, detail)
    outcome: Outcome = "no_tool" if chosen == NONE_LABEL else "wrong_tool"
    return Score(outcome, False, chosen, f"{expected} -> {chosen}", detail)
