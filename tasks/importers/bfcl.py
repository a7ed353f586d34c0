"""Import a BFCL v4 category file (Berkeley Function Calling Leaderboard) as a task-set folder.

Source format (JSON Lines despite the ``.json`` ending), one record a line::

    questions: {"id", "question": [[{"role", "content"}, ...], ...], "function": [{"name", "description", "parameters"}]}
    answers:   {"id", "ground_truth": [{"<function name>": {"<param>": [acceptable values...]}}]}

Each record offers its own functions: they are written inline on the request (``LabelledRequest.tools``)
with BFCL's Python-style parameter types turned into JSON schema. The label is the one function named in
the answer's ``ground_truth``; an irrelevance category has no answers file and every label is "none".
Function names are kept exactly as BFCL spells them (dots included); mapping them for providers that
forbid dots happens elsewhere.

What every importer shares (``ImportSummary``, ``write_taskset``) is in ``taskset_writer``.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from schemas.catalogue import NONE_LABEL, ToolSpec
from schemas.experiment import PER_REQUEST_CATALOGUE
from schemas.taskset import LabelledRequest, Message
from tasks.files.input_errors import InputError, Problem
from tasks.importers.taskset_writer import (
    ImportSummary,
    file_digest,
    offline_experiment_yaml,
    refuse_frozen,
    write_taskset,
)
from tasks.files.json_lines import read_json_objects, refuse_non_json_lines
from tasks.taskset.load_taskset import validation_message

# --------------------------------------------------------------------------------------------------
# BFCL parameter types -> JSON schema
# --------------------------------------------------------------------------------------------------

_TYPES: dict[str, str | None] = {
    "dict": "object", "object": "object",
    "float": "number", "number": "number", "double": "number",
    "tuple": "array", "list": "array", "array": "array",
    "int": "integer", "integer": "integer", "long": "integer",
    "str": "string", "string": "string", "char": "string",
    "bool": "boolean", "boolean": "boolean",
    "null": "null",
    "any": None,
}
"""BFCL's Python-style type names (and the JSON-schema names, which pass through) -> JSON-schema type;
None means no type constraint."""

_KEPT_KEYWORDS = frozenset({
    "description", "enum", "default", "required", "title", "const", "examples", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems",
    "minProperties", "maxProperties",
})
"""JSON-schema keywords copied as they are. Anything else not handled below is BFCL-only (e.g.
``optional``, which ``required`` already expresses) and is dropped and counted."""


class SchemaProblem(ValueError):
    """A parameter schema that cannot be converted; ``where`` is the path inside the function."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")


def convert_schema(schema: Any, where: str, dropped: Counter[str]) -> dict[str, Any]:
    """One BFCL parameter schema as JSON schema, recursively (properties, items, additionalProperties)."""
    if not isinstance(schema, dict):
        raise SchemaProblem(where, f"a schema must be an object, got {type(schema).__name__}")
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type":
            converted = _convert_type(value, where)
            if converted is not None:
                result["type"] = converted
        elif key == "properties":
            if not isinstance(value, dict):
                raise SchemaProblem(where, "'properties' must be an object")
            result["properties"] = {
                name: convert_schema(sub, f"{where}.{name}", dropped) for name, sub in value.items()
            }
        elif key == "items":
            if isinstance(value, list):  # a fixed-length tuple: one schema per position
                result["prefixItems"] = [convert_schema(s, f"{where}[{i}]", dropped) for i, s in enumerate(value)]
            else:
                result["items"] = convert_schema(value, f"{where}[]", dropped)
        elif key == "additionalProperties":
            result[key] = value if isinstance(value, bool) else convert_schema(value, f"{where}{{}}", dropped)
        elif key in ("anyOf", "oneOf", "allOf"):
            if not isinstance(value, list):
                raise SchemaProblem(where, f"'{key}' must be a list")
            result[key] = [convert_schema(s, f"{where}|{i}", dropped) for i, s in enumerate(value)]
        elif key in _KEPT_KEYWORDS:
            result[key] = value
        else:
            dropped[key] += 1
    return result


def _convert_type(value: Any, where: str) -> str | list[str] | None:
    if isinstance(value, list):
        converted = [_convert_type(v, where) for v in value]
        if any(c is None for c in converted):
            return None  # "any" among the alternatives: no constraint at all
        return sorted(set(converted), key=converted.index)  # type: ignore[arg-type]
    if not isinstance(value, str) or value.strip().lower() not in _TYPES:
        raise SchemaProblem(where, f"unknown parameter type {value!r} (known: {', '.join(sorted(_TYPES))})")
    return _TYPES[value.strip().lower()]


def convert_parameters(parameters: Any, where: str, dropped: Counter[str]) -> dict[str, Any]:
    """A function's top-level parameters: always an object schema with ``properties``."""
    if parameters is None:
        return {"type": "object", "properties": {}}
    result = convert_schema(parameters, where, dropped)
    if result.get("type", "object") != "object":
        raise SchemaProblem(where, f"top-level parameters must be an object, got type {result['type']!r}")
    result["type"] = "object"
    result.setdefault("properties", {})
    return result


# --------------------------------------------------------------------------------------------------
# Reading BFCL files
# --------------------------------------------------------------------------------------------------


def category_of(path: Path) -> str:
    """'BFCL_v4_live_multiple.json' -> 'live_multiple' (the slice of every request in the file)."""
    return re.sub(r"^BFCL_v\d+_", "", Path(path).stem)


def _read_json_lines(path: Path, problems: list[Problem]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for each BFCL record; bad lines become problems."""
    for number, record in read_json_objects(path, problems):
        if not isinstance(record.get("id"), str) or not record["id"]:
            problems.append(Problem(str(path), f"line {number}", "bfcl-record", "expected an object with a string 'id'"))
            continue
        yield number, record


def _read_answers(answers: Path, problems: list[Problem]) -> dict[str, tuple[int, Any]]:
    """Answer id -> (line, ground_truth)."""
    found: dict[str, tuple[int, Any]] = {}
    for number, record in _read_json_lines(answers, problems):
        if record["id"] in found:
            problems.append(Problem(str(answers), f"id {record['id']}", "id-unique",
                                    f"answer given twice (lines {found[record['id']][0]} and {number})"))
            continue
        found[record["id"]] = (number, record.get("ground_truth"))
    return found


def _label_of(ground_truth: Any) -> str:
    """The single function name in a ground_truth list, or a ValueError saying what is wrong."""
    if not isinstance(ground_truth, list) or len(ground_truth) != 1:
        count = len(ground_truth) if isinstance(ground_truth, list) else "no"
        raise ValueError(f"ground_truth must hold exactly one call, it holds {count}")
    call = ground_truth[0]
    if not isinstance(call, dict) or len(call) != 1:
        raise ValueError("a ground_truth call must be an object with exactly one function name")
    return next(iter(call))


def _messages(record: dict[str, Any]) -> tuple[Message, ...]:
    question = record.get("question")
    if not isinstance(question, list) or not question or not isinstance(question[0], list) or not question[0]:
        raise ValueError("'question' must be a non-empty list of turns, the first a non-empty list of messages")
    messages = []
    for position, message in enumerate(question[0]):
        if not isinstance(message, dict):
            raise ValueError(f"question[0][{position}] is not an object")
        role = message.get("role")
        if role not in ("user", "assistant", "system"):
            raise ValueError(f"question[0][{position}] has role {role!r}; only user, assistant and system are allowed")
        if not isinstance(message.get("content"), str):
            raise ValueError(f"question[0][{position}] has no text 'content'")
        messages.append(Message(role=role, content=message["content"]))
    return tuple(messages)


def _tools(record: dict[str, Any], dropped: Counter[str]) -> tuple[ToolSpec, ...]:
    functions = record.get("function")
    if not isinstance(functions, list) or not functions:
        raise ValueError("'function' must be a non-empty list")
    tools = []
    for position, function in enumerate(functions):
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ValueError(f"function[{position}] has no string 'name'")
        name = function["name"]
        try:
            parameters = convert_parameters(function.get("parameters"), name, dropped)
            tools.append(ToolSpec(name=name, description=str(function.get("description") or ""), parameters=parameters))
        except SchemaProblem as error:
            raise ValueError(f"function {name}: parameters: {error}") from None
        except ValidationError as error:
            raise ValueError(f"function[{position}] {name!r}: {validation_message(error)}") from None
    repeated = [n for n, c in Counter(t.name for t in tools).items() if c > 1]
    if repeated:
        raise ValueError(f"function names offered twice: {', '.join(repeated)}")
    return tuple(tools)


# --------------------------------------------------------------------------------------------------
# The importer
# --------------------------------------------------------------------------------------------------


def import_bfcl(questions: Path, answers: Path | None, out: Path) -> ImportSummary:
    """Import one BFCL v4 category file (and its possible-answer file) as a new task-set folder ``out``.

    - slice = the category from the file name ('multiple', 'live_multiple', 'live_irrelevance', ...);
    - messages = the record's first turn; roles other than user/assistant/system are an InputError;
    - tools = the record's own functions, parameters converted to JSON schema;
    - expected = the single function in ``ground_truth``, which must be one of the record's functions;
      with no answers file (irrelevance categories only) every label is "none".

    Every problem is an InputError naming the file and the id (or line); nothing is written unless the
    whole file is clean. Refuses a folder that already holds a frozen v1.
    """
    questions, out = Path(questions), Path(out)
    answers = Path(answers) if answers is not None else None
    refuse_frozen(out)
    refuse_non_json_lines(questions, "the BFCL questions file", "one JSON object a line, e.g. BFCL_v4_multiple.json")
    if answers is not None:
        refuse_non_json_lines(answers, "the BFCL answers file",
                              "one JSON object a line, e.g. possible_answer/BFCL_v4_multiple.json")
    category = category_of(questions)
    if answers is None and "irrelevance" not in category:
        raise InputError.one(
            str(questions), "", "answers-required",
            f"category '{category}' is labelled in possible_answer/{questions.name}; pass that file as answers "
            "(only irrelevance categories import without answers, every label 'none')",
        )

    problems: list[Problem] = []
    expected_by_id = _read_answers(answers, problems) if answers is not None else None
    dropped_keywords: Counter[str] = Counter()
    requests: list[LabelledRequest] = []
    seen: dict[str, int] = {}
    for number, record in _read_json_lines(questions, problems):
        request_id = record["id"]
        where = f"id {request_id}"
        if request_id in seen:
            problems.append(Problem(str(questions), where, "id-unique", f"id used twice (lines {seen[request_id]} and {number})"))
            continue
        seen[request_id] = number
        try:
            messages = _messages(record)
            tools = _tools(record, dropped_keywords)
        except ValueError as error:
            problems.append(Problem(str(questions), where, "bfcl-record", str(error)))
            continue

        if expected_by_id is None:
            expected = NONE_LABEL
        elif request_id not in expected_by_id:
            problems.append(Problem(str(answers), where, "question-has-answer",
                                    f"question {request_id} (line {number} of {questions.name}) has no answer here"))
            continue
        else:
            try:
                expected = _label_of(expected_by_id[request_id][1])
            except ValueError as error:
                problems.append(Problem(str(answers), where, "single-call", str(error)))
                continue
            if expected not in {tool.name for tool in tools}:
                problems.append(Problem(str(answers), where, "label-offered",
                                        f"expected {expected!r} is not among the record's functions: "
                                        f"{', '.join(t.name for t in tools)}"))
                continue
        requests.append(LabelledRequest(id=request_id, messages=messages, expected=expected, slice=category, tools=tools))

    if expected_by_id is not None:
        for request_id, (number, _) in expected_by_id.items():
            if request_id not in seen:
                problems.append(Problem(str(answers), f"id {request_id}", "answer-has-question",
                                        f"answer on line {number} names an id that is not in {questions.name}"))
    if problems:
        raise InputError(problems)
    if not requests:
        raise InputError.one(str(questions), "", "not-empty", "no records")

    tool_names = {tool.name for request in requests for tool in request.tools or ()}
    notices = []
    if dropped_keywords:
        kinds = ", ".join(f"{key} ({count})" for key, count in sorted(dropped_keywords.items()))
        notices.append(f"BFCL-only schema keywords left out of the JSON schemas: {kinds}")
    sources = f"{questions.name} (sha256 {file_digest(questions)})"
    if answers is not None:
        sources += f" and {answers.parent.name}/{answers.name} (sha256 {file_digest(answers)})"
    labels = ("expected = the single function in each answer's ground_truth" if answers is not None
              else "no answers file: every expected label is 'none' (no offered tool fits)")
    notes = "\n".join([
        f"Imported from BFCL v4 {sources} by tasks.importers.bfcl.",
        f"{len(requests)} requests, slice '{category}', each offering its own functions "
        f"({len(tool_names)} distinct names, dots kept); {labels}. Nothing dropped.",
        *notices,
    ])
    experiment = offline_experiment_yaml(
        f"bfcl-{category.replace('_', '-')}-offline",
        f"BFCL v4 '{category}' read by both offline selectors, each request offering its own functions.",
        PER_REQUEST_CATALOGUE,
    )
    manifest = write_taskset(out, requests, slices=[category], notes=notes, experiment_yaml=experiment)
    return ImportSummary(
        source="bfcl",
        out=out,
        n_requests=len(requests),
        n_tools=len(tool_names),
        dropped={},
        notices=tuple(notices),
        content_hash=manifest.content_hash,
    )
