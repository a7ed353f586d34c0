"""What changed from one version of a catalogue to the next: tools added and removed, descriptions, schemas
and annotations edited, the order changed. One line per kind of change, naming the tools."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from schemas.catalogue import ToolSpec
from schemas.mcp import McpAnnotations


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
