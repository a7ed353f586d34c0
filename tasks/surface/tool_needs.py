"""Which tools a task needs (its required calls, its ``wants``, its intent when that names a tool), and which
it forbids (``assert.not_called``, ``forbids``), spelled as an arm's surface offers them; a tool the surface
does not offer keeps its backend name, so coverage can say it is missing. Landed per run in
``task_runs.needed_tools`` and ``forbidden_tools`` (docs/surface/views.md: Tool coverage)."""

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
