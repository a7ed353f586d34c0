"""The offered tools and the arm's ``tool_choice`` as a request carries them, shared by the selection harness
(``chat_selector``) and the hosted task agents (``tasks/surface/chat_agent``), so both send the same thing for
the same arm.

- ``wire_tool``: a tool under its wire name (``tool_names``), its schema with no combinator at the root
  (``wire_schema``), what the combinator said added to the description in words;
- ``wire_tool_choice``: the arm's ``tool_choice`` (auto / required / none) or a forced tool's wire name, and
  nothing when no tool is offered (the APIs refuse a tool_choice without tools). The adapters write it in
  each provider's shape (OpenAI ``"auto"`` / ``"required"`` / ``{"type": "function", ...}``; Anthropic
  ``{"type": "auto" | "any" | "none" | "tool"}``). Sending it matters beyond OpenAI: llama-cpp-python's
  ``chatml-function-calling`` renders the prompt with *no tools* when a request carries no ``tool_choice``.

OpenAI ("schema must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'const'/'not' at the
top level") and Anthropic ("input_schema does not support oneOf, allOf, or anyOf at the top level")
refuse a whole request when one tool's schema has a combinator at its root, a common way to say "give
an order number or an email". ``wire_schema`` rewrites such a schema into a plain object schema and says
in words what the combinator said:

- ``anyOf`` / ``oneOf`` of ``{"required": [...]}`` branches: dropped, and the description gains
  "Give at least one of: order_id, customer_email." ("exactly one of" for ``oneOf``);
- branches that declare properties: their properties join the top level (their ``required`` is dropped,
  as it differs per branch), and the description names the alternatives;
- ``allOf``: every branch's properties and ``required`` merge into the top level;
- ``not`` / ``enum`` / ``const`` at the root: dropped.

Only what is *sent* changes: the model's arguments are still checked against the tool's full schema
(``tool_call_check``), so arguments the tool would refuse remain *invalid*.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from schemas.catalogue import ToolSpec
from tasks.selectors.providers.chat_types import WireTool
from tasks.selectors.providers.tool_names import ToolNameMap

NAMED_CHOICES = ("auto", "none", "required")
ROOT_COMBINATORS = ("anyOf", "oneOf", "allOf", "not", "enum", "const")


def _names(branch: dict[str, Any]) -> str:
    fields = list(branch.get("required") or []) or list((branch.get("properties") or {}).keys())
    return " + ".join(fields) if fields else "(an alternative form)"


def wire_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """(the schema to send, a sentence to add to the tool's description: '' when nothing changed)."""
    if not any(key in schema for key in ROOT_COMBINATORS) and schema.get("type") == "object":
        return schema, ""
    sent = copy.deepcopy({k: v for k, v in schema.items() if k not in ROOT_COMBINATORS})
    sent["type"] = "object"
    properties: dict[str, Any] = sent.setdefault("properties", {})
    required: list[str] = list(sent.get("required") or [])
    notes: list[str] = []
    for branch in schema.get("allOf") or []:
        if isinstance(branch, dict):
            properties.update(copy.deepcopy(branch.get("properties") or {}))
            required += [r for r in branch.get("required") or [] if r not in required]
    for key, words in (("anyOf", "at least one of"), ("oneOf", "exactly one of")):
        branches = [b for b in schema.get(key) or [] if isinstance(b, dict)]
        if not branches:
            continue
        for branch in branches:
            for name, spec in (branch.get("properties") or {}).items():
                properties.setdefault(name, copy.deepcopy(spec))
        notes.append(f"Give {words}: {', '.join(_names(b) for b in branches)}.")
    if required:
        sent["required"] = required
    return sent, " ".join(notes)


def wire_tool(tool: ToolSpec, wire: str) -> WireTool:
    """A tool as sent, under its wire name (its size counted once, for the spend estimate)."""
    parameters, note = wire_schema(tool.parameters)
    description = f"{tool.description} {note}" if note else tool.description
    return WireTool(wire, description, parameters, len(wire) + len(description) + len(json.dumps(parameters)))


def wire_tool_choice(choice: str | None, names: ToolNameMap, has_tools: bool) -> str | None:
    """What a request carries as tool_choice: None (nothing sent), auto / none / required, or the wire name
    of a forced tool (``choice`` is then the tool's name as offered)."""
    if choice is None or not has_tools:
        return None
    return choice if choice in NAMED_CHOICES else names.wire(choice)
