"""Import MetaTool's ToolE single-tool queries as a task-set folder over one shared catalogue.

Sources (repository HowieHwong/MetaTool):

- ``plugin_des.json``: ``{"ToolName": "description", ...}``, written as ``catalogues/metatool.json``
  (descriptions only; every tool's parameters are the empty object schema);
- a CSV with columns ``Query,Tool`` (``all_clean_data.csv`` or a sample of it), one request a row,
  id ``mt-00001`` for the first data row, slice ``toole-single``.

The queries were written by a language model, so the importer checks what the source cannot promise.
Query texts are compared case- and whitespace-insensitively. In this order:

1. a row with an empty Query or Tool is dropped (``empty``);
2. a row whose Tool is not in ``plugin_des.json`` is dropped (``unknown_tool``);
3. a query text that appears with two or more different tools (unknown ones included: the source
   disagrees with itself either way) is a label conflict: all its remaining rows are dropped
   (``label_conflict``);
4. a repeat of a (query, tool) row already kept is dropped (``duplicate``); the first row stays.

Dropped rows are listed in the summary and in the manifest notes. Queries that read like an assistant's
reply ("Sure! ...", "Here are ...") are kept but listed as a notice.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from pathlib import Path

from pydantic import ValidationError

from schemas.catalogue import CatalogueFile, ToolSpec
from schemas.taskset import LabelledRequest, Message
from tasks.importers.taskset_writer import (
    ImportSummary,
    data_name,
    file_digest,
    offline_experiments,
    refuse_frozen,
    write_taskset,
)
from tasks.files.input_errors import InputError
from tasks.taskset.load_taskset import validation_message

CATALOGUE = "metatool"
SLICE = "toole-single"
REASONS = ("empty", "unknown_tool", "label_conflict", "duplicate")
"""Why a source row is left out, in the order the rules apply."""

_ASSISTANT_OPENING = re.compile(r"^\s*(sure|certainly|of course|absolutely|here (is|are)|as an ai)\b", re.IGNORECASE)


def query_key(text: str) -> str:
    """How query texts are compared: case- and whitespace-insensitively."""
    return " ".join(text.split()).casefold()


def request_id(row: int) -> str:
    return f"mt-{row:05d}"


def read_plugin_descriptions(path: Path) -> CatalogueFile:
    """``plugin_des.json`` as the shared catalogue, tools in file order."""
    path = Path(path)
    if not path.is_file():
        raise InputError.one(str(path), "", "file-exists", "file not found")
    try:
        raw = json.loads(path.read_bytes())
    except json.JSONDecodeError as error:
        raise InputError.one(str(path), f"line {error.lineno}", "json", f"not JSON: {error.msg}") from None
    except UnicodeDecodeError:
        raise InputError.one(str(path), "", "json", "not UTF-8 text (a binary file, or another encoding): "
                             "plugin_des.json is a UTF-8 JSON object {\"ToolName\": \"description\"}") from None
    if not isinstance(raw, dict) or not raw:
        raise InputError.one(str(path), "", "plugin-descriptions", 'expected a non-empty object {"ToolName": "description"}')
    tools = []
    for name, description in raw.items():
        if not isinstance(description, str):
            raise InputError.one(str(path), f"tool {name}", "plugin-descriptions", "the description must be a string")
        try:
            tools.append(ToolSpec(name=name, description=description.strip()))
        except ValidationError as error:
            raise InputError.one(str(path), f"tool {name!r}", "schema", validation_message(error)) from None
    return CatalogueFile(
        name=CATALOGUE,
        description=f"MetaTool plugin_des.json: {len(tools)} ChatGPT plugins, descriptions only.",
        tools=tools,
    )


def read_queries(path: Path) -> list[tuple[int, str, str]]:
    """(data row number, query, tool) for every data row; row 1 is the first line after the header."""
    path = Path(path)
    if not path.is_file():
        raise InputError.one(str(path), "", "file-exists", "file not found")
    rows: list[tuple[int, str, str]] = []
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise InputError.one(str(path), f"line {line}", "csv-utf8",
                             f"not UTF-8 text at byte {error.start} (a binary file, a spreadsheet, or another "
                             "encoding?): export the queries as a UTF-8 CSV with the columns Query,Tool") from None
    if "\x00" in text:
        line = text[:text.index("\x00")].count("\n") + 1
        raise InputError.one(str(path), f"line {line}", "csv-utf8",
                             "holds NUL bytes (a binary file, or UTF-16 text?): export the queries as a UTF-8 CSV "
                             "with the columns Query,Tool")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [cell.strip() for cell in next(reader, [])]
        if header != ["Query", "Tool"]:
            raise InputError.one(str(path), "line 1", "csv-header", f"expected the columns Query,Tool, found {','.join(header) or 'nothing'}")
        for row, cells in enumerate(reader, start=1):
            if not cells:
                continue  # a blank line
            if len(cells) != 2:
                raise InputError.one(str(path), f"line {reader.line_num}", "csv-columns",
                                     f"expected 2 fields (Query,Tool), found {len(cells)}")
            rows.append((row, cells[0], cells[1].strip()))
    except csv.Error as error:
        raise InputError.one(str(path), f"line {reader.line_num}", "csv", f"not a readable CSV: {error}") from None
    return rows


def _rows(numbers: list[int]) -> str:
    return ("row " if len(numbers) == 1 else "rows ") + ", ".join(str(n) for n in numbers)


def import_metatool(plugin_des: Path, queries_csv: Path, out: Path) -> ImportSummary:
    """Import MetaTool ToolE single-tool queries as a new task-set folder ``out`` (see the module docstring)."""
    plugin_des, queries_csv, out = Path(plugin_des), Path(queries_csv), Path(out)
    refuse_frozen(out)
    catalogue = read_plugin_descriptions(plugin_des)
    known = {tool.name for tool in catalogue.tools}
    rows = read_queries(queries_csv)

    reason_of: dict[int, str] = {}
    details: list[str] = []

    empty = [row for row, query, tool in rows if not query.strip() or not tool]
    for row in empty:
        reason_of[row] = "empty"
    if empty:
        details.append(f"empty: {_rows(empty)} lack a Query or a Tool")

    unknown: dict[str, list[int]] = defaultdict(list)
    for row, _, tool in rows:
        if row not in reason_of and tool not in known:
            unknown[tool].append(row)
            reason_of[row] = "unknown_tool"
    details += [f"unknown_tool: {tool!r} is not in {plugin_des.name} ({_rows(numbers)})" for tool, numbers in unknown.items()]

    by_query: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    for row, query, tool in rows:
        if reason_of.get(row) != "empty":
            by_query[query_key(query)].append((row, query, tool))
    for group in by_query.values():
        tools = dict.fromkeys(tool for _, _, tool in group)
        if len(tools) < 2:
            continue
        for row, _, _ in group:
            reason_of.setdefault(row, "label_conflict")
        labels = "; ".join(f"{tool} ({_rows([r for r, _, t in group if t == tool])})" for tool in tools)
        details.append(f"label_conflict: {group[0][1].strip()!r} -> {labels}")

    kept_at: dict[tuple[str, str], int] = {}
    for row, query, tool in rows:
        if row in reason_of:
            continue
        first = kept_at.setdefault((query_key(query), tool), row)
        if first != row:
            reason_of[row] = "duplicate"
            details.append(f"duplicate: row {row} repeats row {first} ({tool}), the first is kept")

    requests = [
        LabelledRequest(id=request_id(row), messages=(Message(role="user", content=query.strip()),),
                        expected=tool, slice=SLICE)
        for row, query, tool in rows
        if row not in reason_of
    ]
    if not requests:
        raise InputError.one(str(queries_csv), "", "not-empty", "no usable rows")

    notices = []
    assistant_like = [int(r.id[3:]) for r in requests if _ASSISTANT_OPENING.match(r.text)]
    if assistant_like:
        notices.append(f"{len(assistant_like)} kept queries read like an assistant's reply: {_rows(assistant_like)}")
    labels = {r.expected for r in requests}
    unused = [tool.name for tool in catalogue.tools if tool.name not in labels]
    if unused:
        notices.append(f"{len(unused)} catalogue tools are no request's label: {', '.join(sorted(unused))}")

    dropped = {reason: sum(1 for r in reason_of.values() if r == reason) for reason in REASONS}
    notes = "\n".join([
        f"Imported from MetaTool {plugin_des.name} (sha256 {file_digest(plugin_des)}) and {queries_csv.name} "
        f"(sha256 {file_digest(queries_csv)}) by tasks.importers.metatool.",
        f"{len(rows)} CSV rows -> {len(requests)} requests over catalogue '{CATALOGUE}' ({len(known)} tools); "
        f"ids mt-NNNNN = CSV data row. Dropped: " + ", ".join(f"{reason} {dropped[reason]}" for reason in REASONS) + ".",
        *details,
        *notices,
    ])
    experiments = offline_experiments(
        data_name(queries_csv.stem, "offline"),
        f"The Query,Tool rows of {queries_csv.name} over the {len(known)}-tool catalogue of {plugin_des.name} "
        "(imported as MetaTool's ToolE format), read by the offline selectors.",
        CATALOGUE,
    )
    manifest = write_taskset(out, requests, slices=[SLICE], notes=notes, experiments=experiments, catalogues=(catalogue,))
    return ImportSummary(
        source="metatool",
        out=out,
        n_requests=len(requests),
        n_tools=len(known),
        dropped=dropped,
        dropped_rows=tuple(details),
        notices=tuple(notices),
        content_hash=manifest.content_hash,
    )
