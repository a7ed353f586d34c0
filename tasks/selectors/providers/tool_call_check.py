"""Check a tool call from a model: a known tool, arguments that are a JSON object, valid under its schema.

Arguments are validated with the ``jsonschema`` library against the tool's own JSON schema (the draft
the schema declares, default 2020-12), formats included (``email``, ``date``, ...), so a call that names
the right tool with arguments the tool would reject is *invalid*, not correct. Validators are compiled
once per distinct schema.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError

from schemas.catalogue import ToolSpec


@dataclass(frozen=True)
class CallCheck:
    ok: bool
    arguments_json: str | None
    """The arguments as compact JSON text when they parsed, else the raw text (for the row)."""
    detail: str | None = None


@lru_cache(maxsize=4096)
def _validator(schema_json: str) -> Any:
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_arguments(tool: ToolSpec, arguments: Any) -> CallCheck:
    """``arguments`` as the provider gave them: JSON text (OpenAI) or an already parsed object (Anthropic)."""
    if isinstance(arguments, (str, bytes)):
        raw = arguments.decode() if isinstance(arguments, bytes) else arguments
        if not raw.strip():
            parsed: Any = {}
        else:
            try:
                parsed = json.loads(raw)
            except json.JSONDecodeError as error:
                return CallCheck(False, _short(raw, 2000), f"arguments of {tool.name} are not JSON ({error.msg})")
    else:
        parsed = arguments if arguments is not None else {}
    try:
        text = json.dumps(parsed, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return CallCheck(False, None, f"arguments of {tool.name} are not JSON-serialisable")
    if not isinstance(parsed, dict):
        return CallCheck(False, text, f"arguments of {tool.name} are not a JSON object")
    try:
        validator = _validator(json.dumps(tool.parameters, sort_keys=True))
    except SchemaError as error:
        return CallCheck(False, text, f"the schema of {tool.name} is itself invalid ({_short(error.message)})")
    errors = sorted(validator.iter_errors(parsed), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.path) or "(top level)"
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        return CallCheck(False, text, f"arguments break the schema of {tool.name} at {where}: "
                                      f"{_short(first.message)}{more}")
    return CallCheck(True, text)
