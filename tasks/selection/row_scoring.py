"""How the selection instrument scores a row: the functions it calls per row (``ROW_SCORERS``), in order,
each given the planned request, the selection and the columns scored so far, each returning more columns.

- ``tool_columns``: the chosen tool against the label (``score_selection``: outcome, correct, pair);
- ``argument_columns``: when the right tool was called (its arguments may have broken its schema: an
  ``invalid`` row), its call's arguments against the request's expected arguments (``score_arguments``:
  arguments_correct, argument_outcomes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from tasks.selection.score_arguments import NOT_SCORED, score_arguments
from tasks.selection.score_selection import score_selection

if TYPE_CHECKING:
    from schemas.selection.rows import Selection
    from tasks.selection.plan_batch import PlannedRequest

RowScorer = Callable[["PlannedRequest", "Selection", dict[str, Any]], dict[str, Any]]


def tool_columns(planned: PlannedRequest, selection: Selection, scored: dict[str, Any]) -> dict[str, Any]:
    score = score_selection(planned.expected, selection, planned.offered)
    return {"chosen": score.chosen, "correct": score.correct, "outcome": score.outcome, "pair": score.pair,
            "invalid": score.outcome == "invalid", "error": score.outcome == "error",
            "empty": score.outcome == "empty", "detail": score.detail}


def argument_columns(planned: PlannedRequest, selection: Selection, scored: dict[str, Any]) -> dict[str, Any]:
    """Not scored (nulls) unless the right tool was called and the request has expected arguments. A call of
    the right tool whose arguments break its schema is ``invalid`` for tool accuracy (``tool_columns``) and its
    parameters are scored here all the same: a missing required id, a wrong type or an invented enum value is
    where an argument goes wrong."""
    right_tool = scored["outcome"] in ("correct", "invalid") and scored["chosen"] == planned.expected
    tool = next((t for t in planned.tools if t.name == planned.expected), None) if right_tool else None
    score = (score_arguments(planned.expected_arguments, tool.parameters, selection.arguments)
             if tool is not None else NOT_SCORED)
    outcomes = (None if score.outcomes is None
                else [{"parameter": name, "outcome": outcome} for name, outcome in score.outcomes])
    return {"arguments_correct": score.correct, "argument_outcomes": outcomes}


ROW_SCORERS: tuple[RowScorer, ...] = (tool_columns, argument_columns)


def score_row(planned: PlannedRequest, selection: Selection,
              scorers: tuple[RowScorer, ...] = ROW_SCORERS) -> dict[str, Any]:
    """The row's scored columns: each scorer's, in order."""
    scored: dict[str, Any] = {}
    for scorer in scorers:
        scored.update(scorer(planned, selection, scored))
    return scored
