"""Score a call's arguments against a request's expected arguments and the tool's parameter schema: one
outcome per parameter (``ArgumentOutcomeKind``), and whether the call's arguments are right."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from schemas.expected_arguments import ExpectedArgument
from schemas.selection.rows import ARGUMENT_OUTCOMES_RIGHT, ArgumentOutcomeKind

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "array": (list,), "object": (dict,), "null": (type(None),),
}
_STANDARDISED_OUT = re.compile(r"[ ,./\-_*^]")


@dataclass(frozen=True)
class ArgumentScore:
    correct: bool | None
    """Null: not scored (no expected arguments, or no arguments to read)."""
    outcomes: tuple[tuple[str, ArgumentOutcomeKind], ...] | None
    """(parameter, outcome), parameters sent first in the call's order, then those missing."""


NOT_SCORED = ArgumentScore(None, None)


def sent_arguments(arguments: str | None) -> dict[str, Any] | None:
    """The call's arguments as an object, or None when there are none to read (not JSON, not an object)."""
    if arguments is None:
        return None
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def fits_type(value: Any, schema: Mapping[str, Any]) -> bool:
    """Is the value of the JSON type the parameter's schema names (any type when it names none)?"""
    named = schema.get("type")
    if named is None:
        return True
    types = [named] if isinstance(named, str) else list(named)
    for name in types:
        accepted = _JSON_TYPES.get(name)
        if accepted is None:
            return True  # a type this check does not know constrains nothing here
        if isinstance(value, bool) and bool not in accepted:
            continue  # JSON true is not the number 1
        if isinstance(value, accepted):
            return True
    return False


def standardised(value: Any) -> Any:
    """A value as BFCL's checker compares it: strings (also in lists and objects) in lower case, with spaces
    and ,./-_*^ removed and single quotes made double."""
    if isinstance(value, str):
        return _STANDARDISED_OUT.sub("", value).lower().replace("'", '"')
    if isinstance(value, list):
        return [standardised(item) for item in value]
    if isinstance(value, dict):
        return {key: standardised(item) for key, item in value.items()}
    return value


def _same(value: Any, option: Any, expected: ExpectedArgument) -> bool:
    if expected.text == "standardised":
        value, option = standardised(value), standardised(option)
    if isinstance(value, bool) or isinstance(option, bool):
        return type(value) is type(option) and value == option
    if (expected.tolerance is not None and isinstance(value, (int, float)) and isinstance(option, (int, float))):
        return abs(value - option) <= expected.tolerance
    return value == option


def value_matches(expected: ExpectedArgument, value: Any) -> bool:
    """Does a sent value pass the parameter's matcher (with its tolerance and text rule)?"""
    matcher = expected.matcher
    if matcher.kind == "equals" and value is not None:
        return _same(value, matcher.value, expected)
    if matcher.kind == "one_of" and value is not None:
        return any(_same(value, option, expected) for option in matcher.value)
    from tasks.surface.score_task import matches  # imports the task instrument's schemas: not for equals, one_of

    if expected.text == "standardised" and matcher.kind == "contains":
        return matches(matcher.model_copy(update={"value": standardised(matcher.value)}), standardised(value))
    return matches(matcher, value)


def score_arguments(expected: Mapping[str, ExpectedArgument] | None, parameters: Mapping[str, Any],
                    arguments: str | None) -> ArgumentScore:
    """Each parameter sent or expected, scored against the tool's schema (``parameters``) and the expected
    arguments; not scored without expected arguments or without arguments to read."""
    sent = sent_arguments(arguments)
    if expected is None or sent is None:
        return NOT_SCORED
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    outcomes: list[tuple[str, ArgumentOutcomeKind]] = []
    for name, value in sent.items():
        if name not in properties:
            outcomes.append((name, "hallucinated"))
        elif not fits_type(value, properties[name]):
            outcomes.append((name, "wrong_type"))
        elif name in expected:
            outcomes.append((name, "right" if value_matches(expected[name], value) else "wrong_value"))
        else:
            outcomes.append((name, "extra_allowed"))
    for name in [*expected, *sorted(required - set(expected))]:
        if name in sent:
            continue
        argument = expected.get(name)
        if name in required:
            outcomes.append((name, "missing_required"))
        elif argument is not None and not argument.may_be_omitted and argument.matcher.kind != "absent":
            outcomes.append((name, "missing_expected_optional"))
    return ArgumentScore(all(outcome in ARGUMENT_OUTCOMES_RIGHT for _, outcome in outcomes), tuple(outcomes))
