"""Trace one landed work unit of a selection run: a trace per row and the rows' annotations.

Called by select_and_land only when the run traces. Tracing never fails a unit: any error in it turns
tracing off for the rest of the run with one warning, and the rows are landed all the same.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from schemas.rows import Selection
from tasks.tracing.annotations import selection_annotations
from tasks.tracing.exporter import tracing_for
from tasks.tracing.selection_trace import UnitTracer, selection_span_roles
from tasks.tracing.trace_target import TraceTarget


def trace_selection_unit(target: TraceTarget, unit, planned: Sequence, selections: Sequence[Selection],
                         rows: Sequence[Mapping[str, Any]], ended_ns: int) -> None:
    tracing = tracing_for(target)
    if not tracing.alive:
        return
    if not rows:
        return
    records: list[dict[str, Any]] = []
    try:
        # a unit is one arm under one seed: every request is offered the same tools, unless the task set
        # gives each request its own (BFCL style), when the unit's constants are made per request
        unit_tracer = None
        for request, selection, row in zip(planned, selections, rows):
            if unit_tracer is None or unit_tracer.tools is not request.tools:
                unit_tracer = UnitTracer(tracing, row, request.tools, unit.arm.prompt_text, unit.arm.options)
            unit_tracer.emit(row, selection, request.messages_json, ended_ns)
            records.extend(selection_annotations(row, selection_span_roles(row)))
    except Exception as error:  # a bug here must not cost the run its rows
        tracing.give_up(f"could not build spans ({type(error).__name__}: {error})")
        return
    tracing.annotations.post(records)
