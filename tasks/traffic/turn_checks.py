"""Production turns as records are read: each validated against the ProductionTurn schema, turn ids unique;
every problem named with its file and place (shared by every log reader)."""

from __future__ import annotations

from typing import Any, Iterable

from pydantic import ValidationError

from schemas.traffic import ProductionTurn
from tasks.files.input_errors import InputError, Problem

COLUMNS = tuple(ProductionTurn.model_fields)
MAX_PROBLEMS = 50


def _validation_message(error: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'record'}: {e['msg']}" for e in error.errors())


def validate_turns(records: Iterable[tuple[str, dict[str, Any]]], file: str) -> list[ProductionTurn]:
    """(where, record) pairs as turns; every bad record and every repeated turn id is a Problem."""
    turns: list[ProductionTurn] = []
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for where, record in records:
        try:
            turn = ProductionTurn.model_validate({k: v for k, v in record.items() if k in COLUMNS and v is not None})
        except ValidationError as error:
            problems.append(Problem(file, where, "turn-schema", _validation_message(error)))
            continue
        if turn.turn_id in seen:
            problems.append(Problem(file, where, "turn-id-unique", f"turn id {turn.turn_id} also at {seen[turn.turn_id]}"))
            continue
        seen[turn.turn_id] = where
        turns.append(turn)
    if problems:
        raise InputError(problems[:MAX_PROBLEMS] + ([Problem(file, "", "turn-schema",
                                                             f"{len(problems) - MAX_PROBLEMS} more problems")]
                                                    if len(problems) > MAX_PROBLEMS else []))
    return turns
