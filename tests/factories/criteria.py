"""Acceptance-criteria files as text, written the way people write them (one key a line, mappings in flow
style), so a test can point at a line or edit a value with ``str.replace``."""

from __future__ import annotations

from typing import Any


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)


def gate(name: str, kind: str, **fields: Any) -> str:
    """One gate: its name, its kind, then each field on its own line."""
    return "".join([f"  - name: {name}\n", f"    kind: {kind}\n",
                    *(f"    {key}: {_value(value)}\n" for key, value in fields.items())])


def criteria_text(name: str, *gates: str) -> str:
    """A criteria file named ``name`` holding the gates in order."""
    return f"name: {name}\ngates:\n" + "".join(gates)
