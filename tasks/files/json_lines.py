"""JSON Lines: read a file as objects (each bad line a Problem that names it); write models, one a line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from pydantic import BaseModel

from tasks.files.atomic_write import write_atomic
from tasks.files.input_errors import InputError, Problem


def read_json_objects(path: Path, problems: list[Problem], what: str = "file") -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line that holds a JSON object; the rest become problems."""
    path = Path(path)
    if not path.is_file():
        raise InputError.one(str(path), "", "file-exists", f"{what} not found")
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            if number == 1 and (problem := bom_problem(path, raw)):
                problems.append(problem)
                continue
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as error:
                problems.append(Problem(str(path), f"line {number}", "json-lines", f"not JSON: {error.msg}"))
                continue
            if not isinstance(record, dict):
                problems.append(Problem(str(path), f"line {number}", "json-lines", "each line must be a JSON object"))
                continue
            yield number, record


UTF8_BOM = b"\xef\xbb\xbf"


def bom_problem(path: Path, first_line: bytes) -> Problem | None:
    """A UTF-8 byte-order mark at the start of a JSON Lines file (some editors add one): named as such,
    not as 'invalid JSON at line 1 column 1'."""
    if first_line.startswith(UTF8_BOM):
        return Problem(str(path), "line 1", "utf8-no-bom", "the file starts with a UTF-8 byte-order mark (BOM); "
                       "save it as UTF-8 without a BOM")
    return None


def jsonl_bytes(records: Iterable[BaseModel]) -> bytes:
    """Models as JSON Lines: one compact object a line, unset defaults left out, UTF-8 kept as is.

    The one serialisation of task-set files: their content hash is taken over exactly these bytes."""
    return "".join(json.dumps(r.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False) + "\n"
                   for r in records).encode()


def write_jsonl(path: Path, records: Iterable[BaseModel]) -> Path:
    """Write ``jsonl_bytes(records)`` to ``path`` atomically (replacing any earlier file)."""
    return write_atomic(path, jsonl_bytes(records))
