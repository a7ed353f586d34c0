"""A selection row's argument check as an annotation's result: ``right`` / ``wrong`` (score 1 / 0) with every
parameter's outcome, or ``not_scored`` with the reason. The traces put it on the chat model's span
(``selection_trace.py``), the Phoenix experiments log it as an evaluation (``phoenix_experiments.py``); only
for requests with expected arguments. Plain Python."""

from __future__ import annotations

from typing import Any, Mapping

NAME = "argument_check"


def argument_check(row: Mapping[str, Any]) -> dict[str, Any]:
    """``label``, ``score`` (absent when not scored), ``explanation`` and ``metadata`` (expected tool, chosen
    tool, parameter -> outcome) from the row's ``arguments_correct`` and ``argument_outcomes``."""
    outcomes = [(o["parameter"], o["outcome"]) for o in row.get("argument_outcomes") or []]
    correct = row.get("arguments_correct")
    if correct is None:
        result: dict[str, Any] = {"label": "not_scored", "explanation": f"not scored: {_not_scored_reason(row)}"}
    else:
        listed = "; ".join(f"{name}: {outcome}" for name, outcome in outcomes)
        result = {"label": "right" if correct else "wrong", "score": 1.0 if correct else 0.0,
                  "explanation": listed or "no parameter sent or expected"}
    return {**result, "metadata": {"expected": row["expected"], "chosen": row["chosen"], "outcomes": dict(outcomes)}}


def _not_scored_reason(row: Mapping[str, Any]) -> str:
    if row["chosen"] is None:
        return f"no usable answer ({row['outcome']})"
    if row["chosen"] != row["expected"]:
        return f"chose {row['chosen']}, expected {row['expected']}"
    if row.get("arguments") is None:
        return "no arguments were sent (the selector gives none)"
    return "the call's arguments are not a JSON object"
