"""One trace per (run, arm, seed, task) of a surface run: a root AGENT span ``run_task`` (request, final reply,
outcome, tokens), one LLM span ``agent_turn`` per turn of a hosted agent (the offline baseline has none), one
TOOL span ``tool_call`` per call the agent made, in order (invalid and budget-skipped calls too), and the
task check as a CODE annotation ``task_check`` on the root. The warehouse keeps no start times: the run's
recorded wall time is cut into one stretch per turn, its LLM span first, then its calls, each lasting its
backend time."""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from openinference.instrumentation import get_llm_attributes, get_span_kind_attributes, get_tool_attributes
from openinference.semconv.trace import SpanAttributes
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from tasks.tracing.exporter import RunTracing, planned_ids
from tasks.tracing.span_attributes import PREFIX, row_link_attributes, unit_metadata
from tasks.tracing.trace_ids import ROOT, TraceIds

MS = 1_000_000
OFFLINE_AGENTS = ("baseline",)
"""Agents that are no chat model: their turns get no LLM span."""


def call_role(call_index: int) -> str:
    return f"tool:{call_index}"


def turn_role(turn: int) -> str:
    return f"turn:{turn}"


class TaskUnitSpans:
    """What the task runs of one unit share: the offered tools (for the TOOL spans' schemas and the turns'
    tool list, computed once) and the arm's prompt."""

    def __init__(self, tools: Sequence[tuple[str, str, Any]], prompt: str) -> None:
        self.params = {name: parameters for name, _, parameters in tools}
        self.system_message = {"role": "system", "content": prompt}
        self._tools = [{"json_schema": {"type": "function", "function": {
            "name": name, "description": description, "parameters": parameters}}}
            for name, description, parameters in tools]
        self._llm_static: dict[tuple[str, str], dict[str, Any]] = {}

    def llm_static(self, agent: str, model_id: str) -> dict[str, Any]:
        """The turn spans' attributes that are the same for every turn of the unit (the tools, once)."""
        if (agent, model_id) not in self._llm_static:
            self._llm_static[(agent, model_id)] = {
                **get_span_kind_attributes("llm"),
                **get_llm_attributes(provider=agent, system=agent, request_model_name=model_id, tools=self._tools),
            }
        return self._llm_static[(agent, model_id)]


def emit_task_trace(tracing: RunTracing, row: Mapping[str, Any], calls: Sequence[Mapping[str, Any]],
                    request_text: str, shared: TaskUnitSpans, ended_ns: int) -> int:
    """``row``: the task_runs row; ``calls``: its task_calls rows. Returns the number of spans emitted."""
    tracer = tracing.tracer
    ids = TraceIds.of(row["run_id"], row["arm"], row["seed"], row["task_id"])
    total_ns = int(max(row["wall_ms"], 0.0) * MS)
    start_ns = ended_ns - total_ns
    outcome = {"success": row["success"], "stop_reason": row["stop_reason"], "cache_hit": row["cache_hit"]}
    tokens = {k: v for k, v in ((SpanAttributes.LLM_TOKEN_COUNT_PROMPT, row["input_tokens"]),
                                (SpanAttributes.LLM_TOKEN_COUNT_COMPLETION, row["output_tokens"])) if v is not None}
    link = row_link_attributes(row, "task_id", "intent", unit_metadata(row))
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
    n_spans = 1
    by_turn: dict[int, list[Mapping[str, Any]]] = {}
    for call in calls:
        by_turn.setdefault(call["turn"], []).append(call)
    hosted = row["agent"] not in OFFLINE_AGENTS
    n_turns = max([row["n_turns"] or 0, *by_turn]) if (hosted or by_turn) else 0
    stretch = total_ns // n_turns if n_turns else 0
    turn_ns = min(int(max(row.get("agent_ms") or 0.0, 0.0) * MS) // n_turns, stretch) if n_turns and hosted else 0
    for turn in range(1, n_turns + 1):
        turn_start = start_ns + (turn - 1) * stretch
        turn_calls = by_turn.get(turn, [])
        if hosted:
            with planned_ids(ids.trace_id, ids.span(turn_role(turn))):
                span = tracer.start_span("agent_turn", context=parent, start_time=turn_start, attributes={
                    **shared.llm_static(row["agent"], row["model_id"]), **link,
                    **_turn_messages(row, turn, n_turns, turn_calls, request_text, shared),
                    f"{PREFIX}.turn": turn,
                })
            span.end(end_time=turn_start + turn_ns)
            n_spans += 1
        step = (stretch - turn_ns) // (len(turn_calls) + 1) if turn_calls else 0
        for position, call in enumerate(turn_calls, start=1):
            _tool_span(tracer, parent, ids, call, shared, turn_start + turn_ns + position * step)
            n_spans += 1
    for call in calls:  # a call outside the recorded turns (none expected): still its span
        if not 1 <= call["turn"] <= n_turns:
            _tool_span(tracer, parent, ids, call, shared, start_ns)
            n_spans += 1
    if row["stop_reason"] in ("error", "run_budget"):
        root.set_status(Status(StatusCode.ERROR, f"{row['stop_reason']}: {row['detail'] or ''}"[:500]))
    root.end(end_time=ended_ns)
    return n_spans


def _turn_messages(row: Mapping[str, Any], turn: int, n_turns: int, calls: Sequence[Mapping[str, Any]],
                   request_text: str, shared: TaskUnitSpans) -> dict[str, Any]:
    """A turn's messages as the warehouse has them: the system prompt and the request go into the first
    turn (later turns' inputs held tool results the warehouse does not keep); out come the turn's tool
    calls, or on the last turn without calls the final reply."""
    if calls:
        reply = {"role": "assistant", "tool_calls": [
            {"function": {"name": c["name"], "arguments": c["arguments"] or "{}"}} for c in calls]}
    else:
        reply = {"role": "assistant", "content": (row["final_reply"] or "") if turn == n_turns else ""}
    return get_llm_attributes(
        model_name=row["served_model_id"] or row["model_id"],
        input_messages=[shared.system_message, {"role": "user", "content": request_text}] if turn == 1 else None,
        output_messages=[reply])


def _tool_span(tracer, parent, ids: TraceIds, call: Mapping[str, Any], shared: TaskUnitSpans, call_start: int) -> None:
    with planned_ids(ids.trace_id, ids.span(call_role(call["call_index"]))):
        span = tracer.start_span("tool_call", context=parent, start_time=call_start, attributes={
            **get_span_kind_attributes("tool"),
            **get_tool_attributes(name=call["name"], parameters=shared.params.get(call["name"], {})),
            SpanAttributes.INPUT_VALUE: call["arguments"] or "",
            f"{PREFIX}.call.index": call["call_index"], f"{PREFIX}.call.turn": call["turn"],
            f"{PREFIX}.call.valid": call["valid"], f"{PREFIX}.call.executed": call["executed"],
            f"{PREFIX}.call.error": call["error"], f"{PREFIX}.call.irreversible": call["irreversible"],
            f"{PREFIX}.call.handoff": call["handoff"], f"{PREFIX}.call.retry": call["is_retry"],
            f"{PREFIX}.call.result_chars": call["result_chars"],
            **({f"{PREFIX}.call.backend_tool": call["tool"]} if call["tool"] else {}),
            **({f"{PREFIX}.call.server": call["server"]} if call.get("server") else {}),
            **({f"{PREFIX}.call.skipped_budget": True} if call.get("skipped_budget") else {}),
        })
    if not call["valid"]:
        span.set_status(Status(StatusCode.ERROR, f"invalid: {call['invalid_reason'] or ''}"[:500]))
    elif call["error"]:
        span.set_status(Status(StatusCode.ERROR, f"refused: {call['error_detail'] or ''}"[:500]))
    span.end(end_time=call_start + int(call["backend_ms"] * MS))


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
    """The traces and task checks of one landed unit of a surface run, as traced_unit.py handed it over."""
    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for call in unit["calls"]:
        by_task.setdefault(call["task_id"], []).append(call)
    shared = TaskUnitSpans(unit["tools"], unit["prompt"])
    records: list[dict[str, Any]] = []
    for row in unit["rows"]:
        tracing.built(emit_task_trace(tracing, row, by_task.get(row["task_id"], []),
                                      unit["requests"].get(row["task_id"], ""), shared, unit["ended_ns"]))
        records.extend(task_annotations(row))
    tracing.annotations.post(records)
