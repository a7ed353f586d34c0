"""Hand one landed unit of a surface run to the run's trace process (tasks/tracing/trace_sender.py): its
task_runs and task_calls rows, each task's request, the offered tools and the prompt, as plain data;
surface_trace.py builds the spans and task checks over there. Called by the unit only when the run traces,
after its rows landed; plain Python (no OpenTelemetry)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from tasks.core_records import TraceTarget
from tasks.tracing.trace_sender import sender_for


def trace_task_unit(target: TraceTarget, unit, tools: Sequence, planned: Sequence,
                    rows: Sequence[Mapping[str, Any]], call_rows: Sequence[Mapping[str, Any]], ended_ns: int) -> None:
    """A surface run's unit: its task_runs rows, their task_calls rows, the request each task made
    (``planned``: its PlannedTasks), the offered tools (in the seed's order) and the arm's prompt."""
    sender = sender_for(target)
    if not sender.alive or not rows:
        return
    sender.send("surface", {
        "rows": list(rows), "calls": list(call_rows), "ended_ns": ended_ns,
        # the offered tools in the seed's order (names as offered): the TOOL spans' schemas, the turns' tools
        "tools": [(tool.name, tool.description, tool.parameters) for tool in tools],
        "prompt": unit.arm.prompt_text,
        "requests": {item.task.id: _request_text(item.task) for item in planned},
    }, len(rows))


def _request_text(task) -> str:
    messages = getattr(task, "messages", None)
    if messages:
        users = [m.content for m in messages if m.role == "user"]
        return users[-1] if users else ""
    return str(getattr(task, "request", "") or "")
