"""The offered tools and the arm's ``tool_choice`` as a request carries them, shared by the selection harness
(``chat_selector``) and the hosted task agents (``tasks/surface/chat_agent``), so both send the same thing for
the same arm.

- ``wire_tool``: a tool under its wire name (``tool_names``), its schema with no combinator at the root (both
  providers refuse one: ``tool_schemas``), what the combinator said added to the description in words;
- ``wire_tool_choice``: the arm's ``tool_choice`` (auto / required / none) or a forced tool's wire name, and
  nothing when no tool is offered (the APIs refuse a tool_choice without tools). The adapters write it in
  each provider's shape (OpenAI ``"auto"`` / ``"required"`` / ``{"type": "function", ...}``; Anthropic
  ``{"type": "auto" | "any" | "none" | "tool"}``). Sending it matters beyond OpenAI: llama-cpp-python's
  ``chatml-function-calling`` renders the prompt with *no tools* when a request carries no ``tool_choice``.
"""

from __future__ import annotations

import json

from schemas.catalogue import ToolSpec
from tasks.selectors.providers.chat_types import WireTool
from tasks.selectors.providers.tool_names import ToolNameMap
from tasks.selectors.providers.tool_schemas import wire_schema

NAMED_CHOICES = ("auto", "none", "required")


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
