"""Which tools a task needs, and which it forbids, as an arm's surface offers them.

Needed: the tools its assertion's required calls name (``assert.tool``, ``assert.calls``), the actions it
``wants``, and its declared intent when the intent names a tool (the first-call label). Forbidden (negative
cases): the tools its ``assert.not_called`` and ``forbids`` name. Landed per run in ``task_runs.needed_tools``
and ``task_runs.forbidden_tools``; the view ``task_tool_coverage`` sets them against the arm's catalogue
(``task_runs.tool_order``) and the calls the agent made (lastmile's mcp-eval "tool coverage", MCPJam's
per-tool false positives).

Tasks name backend tools (before a transform's prefixes and renames); each is written as the arm's surface
offers it (``desk.find_tickets`` for ``list_tickets``), and a tool the surface does not offer (a transform's
``include`` left it out, or the server lacks it) keeps its backend name, so coverage can say it is missing.
End-state probes (calls the harness makes, not the agent) are neither.
"""

from __future__ import annotations

from typing import Any, Iterable

from schemas.surface.task import SurfaceTask


def _as_offered(names: Iterable[str], surface: Any) -> list[str]:
    """Backend tool names spelled as ``surface`` (a ResolvedSurface) offers them, sorted, each once."""
    offered = {tool.spec.name for tool in surface.tools}
    as_offered = {tool.backend.name: tool.spec.name for tool in surface.tools}
    return sorted({name if name in offered else as_offered.get(name, name) for name in names})


def needed_tools(task: SurfaceTask, surface: Any) -> list[str]:
    """The tools ``task`` needs, named as ``surface`` offers them."""
    named = [call.tool for call in task.assertion.required_calls] + [want.tool for want in task.wants]
    tools = {name for tool in surface.tools for name in (tool.spec.name, tool.backend.name)}
    if task.intent is not None and (task.intent in tools or task.intent in surface.backend_tools):
        named.append(task.intent)
    return _as_offered(named, surface)


def forbidden_tools(task: SurfaceTask, surface: Any) -> list[str]:
    """The tools ``task`` names as calls that must not happen or are unwanted, named as ``surface`` offers them."""
    return _as_offered([call.tool for call in (*task.assertion.not_called, *task.forbids)], surface)
