"""How an MCP tool's annotations count: ``marks_from_annotations`` turns a tool's MCP annotations (and the surface
file's ``marks:`` override) into the tool marks the counters hang on, with the MCP specification's defaults
where the server said nothing (tasks/surface/mcp_backend.py's docstring says what each mark means)."""

from __future__ import annotations

from schemas.mcp import McpAnnotations
from schemas.surface.surface_file import ToolMarkOverride, ToolMarks


def marks_from_annotations(annotations: McpAnnotations | None,
                           override: ToolMarkOverride | None = None) -> tuple[ToolMarks, int]:
    """(marks, upstream reads per executed call) of an MCP tool: see the module's docstring."""
    a = annotations or McpAnnotations()
    if override is not None and override.read_only is not None:
        a = a.model_copy(update={"read_only": override.read_only})
    read_only = bool(a.read_only)
    writes = not read_only
    destructive = True if a.destructive is None else a.destructive
    open_world = True if a.open_world is None else a.open_world
    marks = {"writes": writes, "irreversible": writes and destructive, "handoff": False,
             "upstream_reads": 1 if (read_only or open_world) else 0}
    if override is not None:
        marks.update({k: v for k, v in override.model_dump(exclude={"read_only", "error_text"}).items()
                      if v is not None})
    reads = marks.pop("upstream_reads")
    return ToolMarks(writes=marks["writes"] or marks["irreversible"], irreversible=marks["irreversible"],
                     handoff=marks["handoff"]), reads
