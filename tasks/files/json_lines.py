"""Read a JSON Lines file as objects, turning each bad line into a Problem that names it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

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
            try:
                record = json.loads(raw)
            except json.JSONDecodeError as error:
                problems.append(Problem(str(path), f"line {number}", "json-lines", f"not JSON: {error.msg}"))
                continue
            if not isinstance(record, dict):
                problems.append(Problem(str(path), f"line {number}", "json-lines", "each line must be a JSON object"))
                continue
            yield number, record
