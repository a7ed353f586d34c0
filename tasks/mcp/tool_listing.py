"""An MCP server's tools as tooleval keeps them: a ``ToolSpec`` (name, description, input schema as given)
and the annotations the server gave, with one content hash over both (what a catalogue version freezes
and what a pinned surface checks a running server against)."""

from __future__ import annotations

import json
from typing import Any, Sequence

from schemas.catalogue import ToolSpec
from schemas.mcp import McpAnnotations
from tasks.files.content_hash import sha256_hex


def tool_spec(tool: Any) -> ToolSpec:
    """An ``mcp_types.Tool`` as a catalogue tool: its inputSchema as the parameters, as given."""
    return ToolSpec(name=tool.name, description=tool.description or "", parameters=dict(tool.input_schema or {}))


def annotations_of(tool: Any) -> McpAnnotations | None:
    """The annotations an ``mcp_types.Tool`` carries, or None when the server gave none."""
    given = getattr(tool, "annotations", None)
    if given is None:
        return None
    return McpAnnotations(title=given.title, read_only=given.read_only_hint, destructive=given.destructive_hint,
                          idempotent=given.idempotent_hint, open_world=given.open_world_hint)


def tools_hash(specs: Sequence[ToolSpec], annotations: dict[str, McpAnnotations]) -> str:
    """sha256 over the tools (names, descriptions, schemas) and their annotations, canonical JSON."""
    return sha256_hex(json.dumps([[spec.model_dump(mode="json"),
                                   annotations[spec.name].model_dump(mode="json") if spec.name in annotations else None]
                                  for spec in specs], sort_keys=True, separators=(",", ":")))
