"""Hand one landed work unit to the run's trace process (trace_sender.py): the rows, what the selector
answered and what the request showed, as plain data. The spans and annotations are built over there
(selection_trace.py, surface_trace.py).

Called by the units only when the run traces, after their rows landed. Plain Python (no OpenTelemetry):
tracing never fails a unit and costs the run only the copy of its rows.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from schemas.selection.rows import Selection
from tasks.tracing.trace_sender import sender_for
from tasks.tracing.trace_target import TraceTarget

SELECTION, TASK = "selection", "task"
"""Kinds of unit the trace process builds traces for."""


def trace_selection_unit(target: TraceTarget, unit, planned: Sequence, selections: Sequence[Selection],
                         rows: Sequence[Mapping[str, Any]], ended_ns: int) -> None:
    """``planned``: the unit's PlannedRequests (messages and tools in the seed's order), row for row."""
    sender = sender_for(target)
    if not sender.alive or not rows:
        return
    from tasks.selectors.arm_options import answer_options

    options = unit.arm.options
    sender.send(SELECTION, {
        "prompt": unit.arm.prompt_text, "threshold": options.get("threshold"),
        "invocation_parameters": json.dumps(answer_options(options), sort_keys=True, default=str),
        "ended_ns": ended_ns,
        # the tools are one tuple for the whole unit (pickled once), or one per request (BFCL style)
        "items": [(row, selection, request.messages_json, request.tools)
                  for request, selection, row in zip(planned, selections, rows)],
    }, len(rows))


def trace_task_unit(target: TraceTarget, unit, tools: Sequence, planned: Sequence,
                    rows: Sequence[Mapping[str, Any]], call_rows: Sequence[Mapping[str, Any]], ended_ns: int) -> None:
    """A surface run's unit: its task_runs rows, their task_calls rows, the request each task made
    (``planned``: its PlannedTasks), the offered tools (in the seed's order) and the arm's prompt."""
    sender = sender_for(target)
    if not sender.alive or not rows:
        return
    sender.send(TASK, {
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
