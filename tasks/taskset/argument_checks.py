"""The label check on expected arguments (rule ``argument-parameter``): every parameter a request's expected
arguments name is a parameter of its expected tool, as the request's own tools (else each catalogue in use
offering it) define it. A label no tool answers to is the label-offered rule's to report."""

from __future__ import annotations

import json
from typing import Any, Iterable

from schemas.catalogue import Catalogue, ToolSpec
from tasks.files.input_errors import Problem
from tasks.taskset.load_taskset import TaskSetVersion

ARGUMENT_RULES = 1
"""Rules checked here (counted in a check report's expectations)."""


def _schemas_of(label: str, own_tools: str | None, catalogues: Iterable[Catalogue]) -> list[tuple[str, dict]]:
    """(where the tool comes from, its parameter schema) for each tool the label is offered as."""
    if own_tools is not None:
        return [("the request's own tools", tool["parameters"]) for tool in json.loads(own_tools)
                if tool["name"] == label]
    found = []
    for catalogue in catalogues:
        name = catalogue.offered_as.get(label, label)
        tool: ToolSpec | None = next((t for t in catalogue.tools if t.name == name), None)
        if tool is not None:
            found.append((f"catalogue {catalogue.name}", tool.parameters))
    return found


def argument_problems(version: TaskSetVersion, catalogues: Iterable[Catalogue]) -> list[Problem]:
    """Each request whose expected arguments name a parameter its expected tool's schema does not have."""
    catalogues = list(catalogues)
    file = str(version.requests_path)
    columns: list[list[Any]] = [version.column(name) for name in ("line", "id", "expected", "tools",
                                                                  "expected_arguments")]
    problems = []
    for line, id_, label, own_tools, arguments in zip(*columns):
        if arguments is None:
            continue
        named = list(json.loads(arguments))
        for source, parameters in _schemas_of(label, own_tools, catalogues):
            properties = parameters.get("properties") or {}
            unknown = [name for name in named if name not in properties]
            if unknown:
                problems.append(Problem(
                    file, f"line {line} (id {id_})", "argument-parameter",
                    f"expected arguments name {', '.join(unknown)}, not parameters of {label} in {source} "
                    f"(it has: {', '.join(properties) or 'none'})"))
    return problems
