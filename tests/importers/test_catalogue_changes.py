"""What changed between two catalogue versions: one line per kind of change, naming the tools."""

from __future__ import annotations

from schemas.catalogue import ToolSpec
from schemas.mcp import McpAnnotations
from tasks.mcp.tool_listing import catalogue_changes


def tool(name: str, description: str = "does it", **properties: dict) -> ToolSpec:
    return ToolSpec(name=name, description=description, parameters={"type": "object", "properties": properties})


def test_nothing_changed_says_nothing():
    tools = [tool("a"), tool("b")]
    assert catalogue_changes(tools, tools, {"a": McpAnnotations(read_only=True)},
                             {"a": McpAnnotations(read_only=True)}) == []


def test_each_kind_of_change_is_one_line_naming_its_tools():
    before = [tool("a"), tool("b"), tool("c"), tool("gone")]
    after = [tool("a", "does it better"), tool("b", path={"type": "string"}), tool("c"), tool("new")]
    assert catalogue_changes(before, after, {"c": McpAnnotations(destructive=True)}, {}) == [
        "tools added: new",
        "tools removed: gone",
        "descriptions edited: a",
        "schemas edited: b",
        "annotations changed: c",
    ]


def test_a_new_order_alone_is_a_change():
    assert catalogue_changes([tool("a"), tool("b")], [tool("b"), tool("a")]) == ["order changed: b, a"]
