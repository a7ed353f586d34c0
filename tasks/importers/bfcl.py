"""Import a BFCL v4 category file (Berkeley Function Calling Leaderboard) as a task-set folder.

Source format (JSON Lines despite the ``.json`` ending), one record a line::

    questions: {"id", "question": [[{"role", "content"}, ...], ...], "function": [{"name", "description", "parameters"}]}
    answers:   {"id", "ground_truth": [{"<function name>": {"<param>": [acceptable values...]}}]}

Each record offers its own functions: they are written inline on the request (``LabelledRequest.tools``)
with BFCL's Python-style parameter types turned into JSON schema. The label is the one function named in
the answer's ``ground_truth`` (an empty ``ground_truth`` list labels the record "none"). Labels never come
from a file name: a file without answers imports only with ``label_none`` (``--label-none``), every label
"none". Several files import as slices of one set (``import_bfcl_slices``; ``--slice NAME=FILE[,ANSWERS]``);
a text offered the same tools with two labels (a live_multiple request copied into live_irrelevance) is a
label conflict: every request of it is dropped and listed (``label_conflicts``).
Function names are kept exactly as BFCL spells them (dots included); mapping them for providers that
forbid dots happens elsewhere.

What every importer shares (``ImportSummary``, ``write_taskset``) is in ``taskset_writer``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from pydantic import ValidationError

from schemas.catalogue import NONE_LABEL, ToolSpec
from schemas.expected_arguments import ExpectedArgument
from schemas.selection.experiment import PER_REQUEST_CATALOGUE
from schemas.taskset import LabelledRequest, Message
from tasks.files.input_errors import InputError, Problem
from tasks.files.json_lines import read_json_objects, refuse_non_json_lines
from tasks.importers.bfcl_answers import expected_arguments
from tasks.importers.label_conflicts import REASON as LABEL_CONFLICT
from tasks.importers.label_conflicts import drop_label_conflicts
from tasks.importers.taskset_writer import (
    ImportSummary,
    data_name,
    file_digest,
    offline_experiments,
    refuse_frozen,
    write_taskset,
)
from tasks.selectors.routers.conversation import CONTEXT_OPTION, is_conversation
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
    """The single function name in a ground_truth list ('none' for an empty list: no call is right), or a
    ValueError saying what is wrong."""
    if isinstance(ground_truth, list) and not ground_truth:
        return NONE_LABEL
    if not isinstance(ground_truth, list) or len(ground_truth) != 1:
        count = len(ground_truth) if isinstance(ground_truth, list) else "no"
        raise ValueError(f"ground_truth must hold exactly one call, it holds {count}")
    call = ground_truth[0]
    if not isinstance(call, dict) or len(call) != 1:
        raise ValueError("a ground_truth call must be an object with exactly one function name")
    return next(iter(call))


LATER_TURNS = "(later turns)"
"""How ``_read_source`` counts records whose ``question`` holds turns after the first (not imported)."""

UNSCORED_ARGUMENTS = "(answers not scored)"
"""How ``_read_source`` counts answers whose arguments cannot be expected of their function (BFCL's live data
has a few naming a parameter the function does not have): the request keeps its tool label, unscored."""


def _arguments_of(ground_truth: Any, label: str, tools: Sequence[ToolSpec]) -> dict[str, ExpectedArgument] | None:
    """The expected arguments of the answer's one call (bfcl_answers.py); None for a 'none' label."""
    if label == NONE_LABEL:
        return None
    parameters = next(tool.parameters for tool in tools if tool.name == label)
    return expected_arguments(ground_truth[0][label], parameters, label)


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
    if not isinstance(functions, list):
        raise ValueError("'function' must be a list (it may be empty: then no tool is offered)")
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

_SLICE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class BfclSource:
    """One BFCL file imported as one slice: its questions, and its answers or ``label_none``."""

    slice: str
    questions: Path
    answers: Path | None = None
    label_none: bool = False
    """Every label 'none' (no offered tool fits): said explicitly, never read from the file's name."""


def _check_source(source: BfclSource) -> None:
    if not _SLICE_NAME.match(source.slice):
        raise InputError.one(str(source.questions), "", "slice-name",
                             f"slice name {source.slice!r}: use letters, digits, '.', '_' or '-'")
    refuse_non_json_lines(source.questions, "the BFCL questions file",
                          "one JSON object a line, e.g. BFCL_v4_multiple.json")
    if source.answers is not None:
        refuse_non_json_lines(source.answers, "the BFCL answers file",
                              "one JSON object a line, e.g. possible_answer/BFCL_v4_multiple.json")
    if source.answers is None and not source.label_none:
        raise InputError.one(
            str(source.questions), "", "answers-required",
            f"no answers file for slice '{source.slice}': pass its possible_answer file, or --label-none if no "
            "offered tool fits any of its requests (labels never come from a file's name)",
        )
    if source.answers is not None and source.label_none:
        raise InputError.one(str(source.questions), "", "answers-or-label-none",
                             f"slice '{source.slice}' has an answers file and --label-none: give one of the two")


def _read_source(source: BfclSource, problems: list[Problem], dropped_keywords: Counter[str],
                 seen: dict[str, tuple[Path, int]]) -> list[LabelledRequest]:
    """The requests of one file as one slice; problems (naming the file and id) are collected."""
    questions, answers = source.questions, source.answers
    expected_by_id = _read_answers(answers, problems) if answers is not None else None
    requests: list[LabelledRequest] = []
    read_here: set[str] = set()
    for number, record in _read_json_lines(questions, problems):
        request_id = record["id"]
        where = f"id {request_id}"
        if request_id in seen:
            read_here.add(request_id)  # its answer has a question (the duplicate is the problem)
            first_file, first_line = seen[request_id]
            problems.append(Problem(str(questions), where, "id-unique",
                                    f"id used twice (line {number}, and line {first_line} of {first_file.name})"))
            continue
        seen[request_id] = (questions, number)
        read_here.add(request_id)
        try:
            messages = _messages(record)
            if isinstance(record.get("question"), list) and len(record["question"]) > 1:
                dropped_keywords[LATER_TURNS] += 1  # counted beside the schema keywords, said apart
            tools = _tools(record, dropped_keywords)
        except ValueError as error:
            problems.append(Problem(str(questions), where, "bfcl-record", str(error)))
            continue

        arguments = None
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
            if expected != NONE_LABEL and expected not in {tool.name for tool in tools}:
                offered = ", ".join(t.name for t in tools) or "no functions"
                problems.append(Problem(str(answers), where, "label-offered",
                                        f"expected {expected!r} is not among the record's functions: {offered}"))
                continue
            try:
                arguments = _arguments_of(expected_by_id[request_id][1], expected, tools)
            except ValueError:
                arguments = None  # the tool label stands; its arguments are not scored (said in the notices)
                dropped_keywords[UNSCORED_ARGUMENTS] += 1
        requests.append(LabelledRequest(id=request_id, messages=messages, expected=expected, slice=source.slice,
                                        tools=tools, expected_arguments=arguments))
    if expected_by_id is not None:
        for request_id, (number, _) in expected_by_id.items():
            if request_id not in read_here:
                problems.append(Problem(str(answers), f"id {request_id}", "answer-has-question",
                                        f"answer on line {number} names an id that is not in {questions.name}"))
    if not requests and not problems:
        problems.append(Problem(str(questions), "", "not-empty", "no records"))
    return requests


def _is_bfcl_file(path: Path) -> bool:
    return re.match(r"BFCL_v\d+_", Path(path).name) is not None


def experiment_name(sources: Sequence[BfclSource]) -> str:
    """The imported experiments' name, after the data given: its slices, prefixed 'bfcl' only when every
    questions file is one of BFCL's own (``BFCL_v4_<category>.json``); the importer reads BFCL's format,
    whoever wrote the data."""
    prefix = ("bfcl",) if all(_is_bfcl_file(source.questions) for source in sources) else ()
    return data_name(*prefix, *(source.slice for source in sources), "offline")


def experiment_description(sources: Sequence[BfclSource], multi_turn: int = 0) -> str:
    """What the imported experiments read: each slice with its questions file, and how many requests are
    conversations (earlier turns before the last user turn)."""
    slices = ", ".join(f"{source.slice} ({source.questions.name}"
                       + (", every label 'none')" if source.answers is None else ")") for source in sources)
    origin = "BFCL v4" if all(_is_bfcl_file(source.questions) for source in sources) else "BFCL v4 format"
    kept = (f" {multi_turn} request(s) are whole conversations, kept as they are: the offline routers read "
            f"the last user turn after {CONTEXT_OPTION} earlier turns." if multi_turn else "")
    return (f"{slices}, imported as {origin} JSON Lines, read by the offline selectors, each request "
            f"offering its own functions.{kept}")


def import_bfcl(questions: Path, answers: Path | None, out: Path, *, label_none: bool = False) -> ImportSummary:
    """Import one BFCL v4 category file as a new task-set folder ``out``; its slice is the category named
    in the file name ('multiple', 'live_multiple', ...). See ``import_bfcl_slices``."""
    questions = Path(questions)
    source = BfclSource(slice=category_of(questions), questions=questions,
                        answers=Path(answers) if answers is not None else None, label_none=label_none)
    return import_bfcl_slices([source], out)


def import_bfcl_slices(sources: Sequence[BfclSource], out: Path) -> ImportSummary:
    """Import BFCL v4 files, each as one slice of one new task-set folder ``out``.

    - messages = the record's first turn; roles other than user/assistant/system are an InputError;
    - tools = the record's own functions (possibly none), parameters converted to JSON schema;
    - expected = the single function in the answer's ``ground_truth`` (which must be one of the record's
      functions), 'none' for an empty ``ground_truth``; with ``label_none`` and no answers file, 'none';
    - expected_arguments = that call's acceptable values per parameter (``bfcl_answers.expected_arguments``);
    - a label conflict (the same text offered the same tools with different labels, e.g. a live_multiple
      request and its live_irrelevance copy labelled 'none') drops every request of it, listed in the
      summary and the manifest notes (``label_conflicts``): the run's label check would refuse the set.

    Every problem is an InputError naming the file and the id (or line); nothing is written unless every
    file is clean. Ids must be unique across the files. Refuses a folder that already holds a frozen v1.
    """
    out = Path(out)
    refuse_frozen(out)
    if not sources:
        raise InputError.one(str(out), "", "sources-given", "no BFCL file given: name a questions file or --slice")
    names = [source.slice for source in sources]
    for name in sorted({n for n in names if names.count(n) > 1}):
        raise InputError.one(str(out), f"slice {name}", "slice-unique", "two files are given the same slice name")
    for source in sources:
        _check_source(source)

    problems: list[Problem] = []
    dropped_keywords: Counter[str] = Counter()
    seen: dict[str, tuple[Path, int]] = {}
    requests: list[LabelledRequest] = []
    for source in sources:
        requests += _read_source(source, problems, dropped_keywords, seen)
    if problems:
        raise InputError(problems)
    read = len(requests)
    requests, conflicts = drop_label_conflicts(requests)
    dropped = {LABEL_CONFLICT: read - len(requests)}
    if not requests:
        raise InputError.one(str(out), "", "not-empty", "every request is in a label conflict: "
                             + "; ".join(conflicts[:3]))

    later = dropped_keywords.pop(LATER_TURNS, 0)
    unscored = dropped_keywords.pop(UNSCORED_ARGUMENTS, 0)
    tool_names = {tool.name for request in requests for tool in request.tools or ()}
    no_tools = sum(1 for request in requests if not request.tools)
    notices = []
    if dropped_keywords:
        kinds = ", ".join(f"{key} ({count})" for key, count in sorted(dropped_keywords.items()))
        notices.append(f"BFCL-only schema keywords left out of the JSON schemas: {kinds}")
    if later:
        notices.append(f"{later} record(s) hold later turns in 'question' (a multi-turn task): each was imported "
                       "as its first turn, the later turns left out")
    if unscored:
        notices.append(f"{unscored} answer(s) name arguments their function cannot take (e.g. a parameter it does "
                       "not have): imported with their tool label, their arguments not scored")
    if no_tools:
        notices.append(f"{no_tools} request(s) offer no function at all (their right answer is 'none')")
    multi_turn = sum(1 for request in requests if is_conversation(request.messages))
    if multi_turn:
        notices.append(f"{multi_turn} request(s) are whole conversations (turns before the last user turn), kept "
                       f"as they are: the offline routers read the last user turn after {CONTEXT_OPTION} earlier "
                       "turns (docs/routing/decision-models.md)")
    lines = [f"Imported from BFCL v4 by tasks.importers.bfcl, {len(requests)} requests, each offering its own "
             f"functions ({len(tool_names)} distinct names, dots kept). "
             + (f"Dropped: {LABEL_CONFLICT} {dropped[LABEL_CONFLICT]} (every request of a text offered the same "
                "tools with two or more labels, across the slices or within one)." if conflicts
                else "Nothing dropped.")]
    for source in sources:
        count = sum(1 for request in requests if request.slice == source.slice)
        described = f"{source.questions.name} (sha256 {file_digest(source.questions)})"
        if source.answers is not None:
            described += (f" and {source.answers.parent.name}/{source.answers.name} "
                          f"(sha256 {file_digest(source.answers)}): expected = the single function in each "
                          "answer's ground_truth ('none' where it is empty), its acceptable values per parameter "
                          "kept as the expected arguments")
        else:
            described += ": no answers file, --label-none given: every expected label is 'none'"
        lines.append(f"slice '{source.slice}': {count} requests from {described}.")
    notes = "\n".join([*lines, *conflicts, *notices])
    experiments = offline_experiments(experiment_name(sources), experiment_description(sources, multi_turn),
                                      PER_REQUEST_CATALOGUE)
    manifest = write_taskset(out, requests, slices=names, notes=notes, experiments=experiments)
    return ImportSummary(
        source="bfcl",
        out=out,
        n_requests=len(requests),
        n_tools=len(tool_names),
        dropped=dropped,
        dropped_rows=tuple(conflicts),
        notices=tuple(notices),
        content_hash=manifest.content_hash,
    )
