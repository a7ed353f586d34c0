"""An MCP server's tools as tooleval keeps them: a ``ToolSpec`` (name, description, input schema as given)
and the annotations the server gave, with one content hash over both (what a catalogue version freezes
and what a pinned surface checks a running server against), and what changed from one version to the next."""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from schemas.catalogue import ToolSpec
from schemas.mcp import McpAnnotations
from tasks.files.content_hash import sha256_hex

Listing = tuple[list[ToolSpec], dict[str, McpAnnotations]]
"""What a server lists: its tools, and the annotations it gave (tool name -> annotations)."""


def tool_spec(tool: Any) -> ToolSpec:
    """An ``mcp_types.Tool`` as a catalogue tool: its inputSchema as the parameters, as given."""
    return ToolSpec(name=tool.name, description=tool.description or "", parameters=dict(tool.input_schema or {}))


def annotations_of(tool: Any) -> McpAnnotations | None:
    """The annotations an ``mcp_types.Tool`` gives (None when it gives none); the title is ``Tool.title``,
    else ``annotations.title``, as the MCP specification ranks them."""
    given = tool.annotations
    annotations = McpAnnotations(
        title=getattr(tool, "title", None) or (given.title if given else None),
        read_only=given.read_only_hint if given else None,
        destructive=given.destructive_hint if given else None,
        idempotent=given.idempotent_hint if given else None,
        open_world=given.open_world_hint if given else None,
    )
    return annotations if annotations.model_dump(exclude_none=True) else None


def tools_hash(tools: Sequence[ToolSpec], annotations: Mapping[str, McpAnnotations] | None) -> str:
    """sha256 of the tools in order (name, description, schema, annotations) as canonical JSON: what a
    catalogue version freezes (``source.content_hash``) and what a pinned surface checks a server against."""
    given = annotations or {}
    listing = [{"name": tool.name, "description": tool.description, "parameters": tool.parameters,
                "annotations": given[tool.name].model_dump(exclude_none=True) if tool.name in given else None}
               for tool in tools]
    return sha256_hex(json.dumps(listing, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def catalogue_changes(before: Sequence[ToolSpec], after: Sequence[ToolSpec],
                      annotations_before: Mapping[str, McpAnnotations] | None = None,
                      annotations_after: Mapping[str, McpAnnotations] | None = None) -> list[str]:
    """One line per kind of change from ``before`` to ``after`` ('descriptions edited: read_graph'), tools
    in the order the newer version lists them (removed ones in the older order); empty when nothing changed."""
    old = {tool.name: tool for tool in before}
    new = {tool.name: tool for tool in after}
    old_marks, new_marks = annotations_before or {}, annotations_after or {}
    both = [name for name in new if name in old]
    kinds = {
        "tools added": [name for name in new if name not in old],
        "tools removed": [name for name in old if name not in new],
        "descriptions edited": [name for name in both if old[name].description != new[name].description],
        "schemas edited": [name for name in both if old[name].parameters != new[name].parameters],
        "annotations changed": [name for name in both if old_marks.get(name) != new_marks.get(name)],
    }
    lines = [f"{kind}: {', '.join(names)}" for kind, names in kinds.items() if names]
    if both != [name for name in old if name in new]:
        lines.append(f"order changed: {', '.join(both)}")
    return lines
