"""Hand one landed selection unit to the run's trace process (tasks/tracing/trace_sender.py): the rows, what
the selector answered and what the request showed, as plain data; selection_trace.py builds the spans and
annotations over there. Called by the unit only when the run traces, after its rows landed. Plain Python (no
OpenTelemetry): tracing never fails a unit and costs the run only the copy of its rows."""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from schemas.selection.rows import Selection
from tasks.core_records import TraceTarget
from tasks.selectors.arm_options import answer_options
from tasks.tracing.trace_sender import sender_for


def trace_selection_unit(target: TraceTarget, unit, planned: Sequence, selections: Sequence[Selection],
                         rows: Sequence[Mapping[str, Any]], ended_ns: int) -> None:
    """``planned``: the unit's PlannedRequests (messages and tools in the seed's order), row for row."""
    sender = sender_for(target)
    if not sender.alive or not rows:
        return
    options = unit.arm.options
    sender.send("selection", {
        "prompt": unit.arm.prompt_text, "threshold": options.get("threshold"),
        "invocation_parameters": json.dumps(answer_options(options), sort_keys=True, default=str),
        "ended_ns": ended_ns,
        # the tools are one tuple for the whole unit (pickled once), or one per request (BFCL style)
        "items": [(row, selection, request.messages_json, request.tools, request.expected_arguments is not None)
                  for request, selection, row in zip(planned, selections, rows)],
    }, len(rows))
