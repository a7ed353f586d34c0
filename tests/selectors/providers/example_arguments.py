"""Minimal arguments that satisfy a tool's JSON schema (for scripted replies that should be valid)."""

from __future__ import annotations

from typing import Any

PATTERN_EXAMPLES = {
    "^NW-[0-9]{7}$": "NW-1234567",
    "^CS-[0-9]{6}$": "CS-123456",
    "^DP-[0-9]{5}$": "DP-12345",
    "^GC-[0-9A-Z]{4}-[0-9A-Z]{4}$": "GC-AB12-CD34",
    "^KB-[0-9]{4}$": "KB-1234",
    "^PM-[0-9]{6}$": "PM-123456",
    "^RF-[0-9]{6}$": "RF-123456",
    "^[A-Z]{2}$": "GB",
}
FORMAT_EXAMPLES = {"email": "maria@example.com", "date": "2026-11-30"}


def example_value(schema: dict[str, Any]) -> Any:
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if kind == "string":
        if "pattern" in schema:
            return PATTERN_EXAMPLES[schema["pattern"]]
        if "format" in schema:
            return FORMAT_EXAMPLES[schema["format"]]
        return "x" * max(int(schema.get("minLength", 1)), 1)
    if kind == "integer":
        return max(int(schema.get("minimum", 1)), 1)
    if kind == "number":
        return float(max(schema.get("minimum", 1), schema.get("exclusiveMinimum", 0) + 1))
    if kind == "boolean":
        return True
    if kind == "array":
        return [example_value(schema.get("items", {"type": "string"}))] * max(int(schema.get("minItems", 0)), 1)
    return example_arguments(schema)


def example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Required properties (and the first anyOf / oneOf branch's) filled with valid values."""
    required = list(schema.get("required", []))
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            required += schema[key][0].get("required", [])
    properties = schema.get("properties", {})
    return {name: example_value(properties.get(name, {"type": "string"})) for name in dict.fromkeys(required)}
