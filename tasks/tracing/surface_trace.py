"""One trace per (run, arm, seed, task) of a surface run (tasks done on a tool surface):

- root span (AGENT) ``run_task``: the task's request in, the agent's final reply out, the outcome (success,
  stop reason, failed assertions), turns, tokens, the model as served;
- one TOOL span ``tool_call`` per call the agent made, in order: the tool's name as offered, its arguments,
  whether it was valid, executed, refused (the backend's refusal as the span's error), irreversible, a
  hand-off, a retry; an invalid or budget-skipped call is a TOOL span too, never executed.

The task check (success against the task's assertion) is a CODE annotation ``task_check`` on the root span.
Span times: the run ends when the unit's outcomes were in hand and lasts its recorded wall time; the calls
are laid out in order across it, each lasting its backend time (the recorder keeps no call start times).
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from openinference.instrumentation import get_span_kind_attributes, get_tool_attributes
from openinference.semconv.trace import SpanAttributes
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from tasks.tracing.exporter import RunTracing, planned_ids
from tasks.tracing.span_attributes import PREFIX, row_link_attributes, unit_metadata
from tasks.tracing.trace_ids import ROOT, TraceIds

MS = 1_000_000


def call_role(call_index: int) -> str:
    return f"tool:{call_index}"


def emit_task_trace(tracing: RunTracing, row: Mapping[str, Any], calls: Sequence[Mapping[str, Any]],
                    request_text: str, tool_params: Mapping[str, Any], ended_ns: int) -> None:
    """``row``: the task_runs row; ``calls``: its task_calls rows; ``tool_params``: offered name -> JSON schema."""
    tracer = tracing.tracer
    ids = TraceIds.of(row["run_id"], row["arm"], row["seed"], row["task_id"])
    total_ns = int(max(row["wall_ms"], 0.0) * MS)
    start_ns = ended_ns - total_ns
    outcome = {"success": row["success"], "stop_reason": row["stop_reason"], "cache_hit": row["cache_hit"]}
    tokens = {k: v for k, v in ((SpanAttributes.LLM_TOKEN_COUNT_PROMPT, row["input_tokens"]),
                                (SpanAttributes.LLM_TOKEN_COUNT_COMPLETION, row["output_tokens"])) if v is not None}
    with planned_ids(ids.trace_id, ids.span(ROOT)):
        root = tracer.start_span("run_task", start_time=start_ns, attributes={
            **get_span_kind_attributes("agent"),
            **row_link_attributes(row, "task_id", "intent", unit_metadata(row), outcome),
            SpanAttributes.INPUT_VALUE: request_text,
            SpanAttributes.OUTPUT_VALUE: row["final_reply"] or "",
            f"{PREFIX}.agent": row["agent"], f"{PREFIX}.surface": row["surface"],
            f"{PREFIX}.n_turns": row["n_turns"], f"{PREFIX}.n_calls": row["n_calls"],
            f"{PREFIX}.failed_assertions": json.dumps(list(row["failed_assertions"] or [])),
            f"{PREFIX}.tool_order": json.dumps(list(row["tool_order"])),
            SpanAttributes.LLM_MODEL_NAME: row["served_model_id"] or row["model_id"], **tokens,
        })
    parent = trace.set_span_in_context(root)
    step = total_ns // (len(calls) + 1) if calls else 0
    for position, call in enumerate(calls, start=1):
        call_start = start_ns + position * step
        with planned_ids(ids.trace_id, ids.span(call_role(call["call_index"]))):
            span = tracer.start_span("tool_call", context=parent, start_time=call_start, attributes={
                **get_span_kind_attributes("tool"),
                **get_tool_attributes(name=call["name"], parameters=tool_params.get(call["name"], {})),
                SpanAttributes.INPUT_VALUE: call["arguments"] or "",
                f"{PREFIX}.call.index": call["call_index"], f"{PREFIX}.call.turn": call["turn"],
                f"{PREFIX}.call.valid": call["valid"], f"{PREFIX}.call.executed": call["executed"],
                f"{PREFIX}.call.error": call["error"], f"{PREFIX}.call.irreversible": call["irreversible"],
                f"{PREFIX}.call.handoff": call["handoff"], f"{PREFIX}.call.retry": call["is_retry"],
                f"{PREFIX}.call.result_chars": call["result_chars"],
                **({f"{PREFIX}.call.backend_tool": call["tool"]} if call["tool"] else {}),
                **({f"{PREFIX}.call.skipped_budget": True} if call.get("skipped_budget") else {}),
            })
        if not call["valid"]:
            span.set_status(Status(StatusCode.ERROR, f"invalid: {call['invalid_reason'] or ''}"[:500]))
        elif call["error"]:
            span.set_status(Status(StatusCode.ERROR, f"refused: {call['error_detail'] or ''}"[:500]))
        span.end(end_time=call_start + int(call["backend_ms"] * MS))
    if row["stop_reason"] in ("error", "run_budget"):
        root.set_status(Status(StatusCode.ERROR, f"{row['stop_reason']}: {row['detail'] or ''}"[:500]))
    root.end(end_time=ended_ns)


def task_annotations(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The task check as a CODE annotation on the run's root span."""
    ids = TraceIds.of(row["run_id"], row["arm"], row["seed"], row["task_id"])
    failed = list(row["failed_assertions"] or [])
    return [{
        "name": "task_check", "annotator_kind": "CODE", "span_id": ids.span_hex(ROOT),
        "result": {"label": "success" if row["success"] else "failure", "score": 1.0 if row["success"] else 0.0,
                   "explanation": f"stopped: {row['stop_reason']}" + (f"; failed: {', '.join(failed)}" if failed
                                                                      else "")},
        "metadata": {"stop_reason": row["stop_reason"], "failed_assertions": failed},
    }]


def emit_task_unit(tracing: RunTracing, unit: Mapping[str, Any]) -> None:
    """The traces and task checks of one landed unit of a surface run, as trace_unit.py handed it over."""
    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for call in unit["calls"]:
        by_task.setdefault(call["task_id"], []).append(call)
    records: list[dict[str, Any]] = []
    for row in unit["rows"]:
        emit_task_trace(tracing, row, by_task.get(row["task_id"], []), unit["requests"].get(row["task_id"], ""),
                        unit["params"], unit["ended_ns"])
        tracing.built(1 + len(by_task.get(row["task_id"], [])))
        records.extend(task_annotations(row))
    tracing.annotations.post(records)
