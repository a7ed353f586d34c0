"""A BFCL answer's acceptable values as a labelled request's expected arguments (schemas/expected_arguments.py).

BFCL's possible_answer gives, per parameter of the right function, a list of acceptable values; "" among
them means the parameter may be left out. Its checker (bfcl_eval/eval_checker/ast_eval/ast_checker.py)
compares strings, and strings inside lists and objects, standardised (lower case, spaces and ,./-_*^
removed), accepts an integer for a float parameter, and reads an object parameter's acceptable values as
one object per acceptable combination, each key with its own list. So each parameter becomes a ``one_of``
matcher with ``text: standardised``; a float parameter's integers become floats; an object's combinations
are written out one by one. A parameter of the function that the answer does not name is expected absent
(the checker refuses it as unexpected).
"""

from __future__ import annotations

from itertools import product
from typing import Any, Mapping

from schemas.expected_arguments import ExpectedArgument

MAY_BE_OMITTED = ""
"""BFCL's mark, among a parameter's acceptable values, that leaving it out is right too."""
MAX_COMBINATIONS = 1024
"""An object parameter's acceptable objects written out, at most (more is refused as input)."""


def _typed(value: Any, schema: Mapping[str, Any]) -> Any:
    """A value as the checker compares it for the parameter's JSON type: integers of a number parameter as
    floats (it accepts an int for a float)."""
    if schema.get("type") == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _objects(acceptable: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """Every object an object parameter's answer accepts: one per combination of its keys' values (a key
    whose values hold "" may be left out)."""
    keys = list(acceptable)
    choices = []
    for key in keys:
        values = acceptable[key]
        if not isinstance(values, list) or not values:
            raise ValueError(f"{where}.{key}: acceptable values must be a non-empty list")
        choices.append(values)
    count = 1
    for values in choices:
        count *= len(values)
    if count > MAX_COMBINATIONS:
        raise ValueError(f"{where}: {count} acceptable objects, more than {MAX_COMBINATIONS} written out")
    return [{key: value for key, value in zip(keys, combination) if value != MAY_BE_OMITTED}
            for combination in product(*choices)]


def _holds_text(value: Any) -> bool:
    """Does the value hold a string (itself, or in a list or object at any depth)?"""
    if isinstance(value, str):
        return True
    if isinstance(value, (list, dict)):
        return any(_holds_text(item) for item in (value.values() if isinstance(value, dict) else value))
    return False


def _acceptable(value: Any, schema: Mapping[str, Any], where: str) -> list[Any]:
    """The concrete values one acceptable value stands for: an object parameter's answer (each key with its
    list of values) as every object it accepts, a list of such objects as every list of them, else the value
    itself."""
    if isinstance(value, dict) and schema.get("type") == "object":
        return _objects(value, where)
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value) \
            and schema.get("type") == "array":
        lists = [list(combination) for combination in product(
            *(_objects(item, f"{where}[{i}]") for i, item in enumerate(value)))]
        if len(lists) > MAX_COMBINATIONS:
            raise ValueError(f"{where}: {len(lists)} acceptable lists, more than {MAX_COMBINATIONS} written out")
        return lists
    return [_typed(value, schema)]


def expected_arguments(answer: Any, parameters: Mapping[str, Any], where: str) -> dict[str, ExpectedArgument]:
    """The expected arguments of one ground-truth call's answer (parameter -> acceptable values), read
    against the function's converted parameter schema; a ValueError says what is wrong."""
    if not isinstance(answer, dict):
        raise ValueError(f"{where}: the answer's parameters must be an object")
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    unknown = sorted(set(answer) - set(properties))
    if unknown:
        raise ValueError(f"{where}: answer names parameters the function does not have: {', '.join(unknown)}")
    expected: dict[str, ExpectedArgument] = {}
    for name, values in answer.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"{where}.{name}: acceptable values must be a non-empty list")
        schema = properties[name]
        options = [option for value in values if value != MAY_BE_OMITTED
                   for option in _acceptable(value, schema, f"{where}.{name}")]
        if not options:  # only "": the checker accepts no value but ""; leaving it out is right
            expected[name] = ExpectedArgument(matcher={"absent": True})
            continue
        expected[name] = ExpectedArgument(matcher={"one_of": options}, may_be_omitted=MAY_BE_OMITTED in values,
                                          text="standardised" if _holds_text(options) else "exact")
    for name in properties:
        if name not in answer:
            expected[name] = ExpectedArgument(matcher={"absent": True})
    return expected
