"""One trace per (run, arm, seed, request) of a selection run, built from what the unit landed:

- root span (CHAIN) ``select_tool``: the request in, the tool chosen out, the row's outcome;
- ``decide_tool`` (DECISION) for each decision model: the offline selector itself (lexical, embedding), or
  a routed arm's router; every option's probability, the confidence, the pick, the threshold, the fallback;
- ``chat_completion`` (LLM) for a hosted chat model: the messages, the tools in the seed's order, the tool
  call, tokens, latency and the model as served (OpenInference's own attribute helpers).

A selection run executes no tool, so its traces have no TOOL span (surface runs do: surface_trace.py).
Span times: each trace ends when its unit's selections were in hand and lasts the selection's recorded
latency (the decision model's part first); a cache hit keeps the latency of the call it repeats.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from openinference.instrumentation import (
    get_decision_attributes,
    get_input_attributes,
    get_llm_attributes,
    get_output_attributes,
    get_span_kind_attributes,
)
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from schemas.catalogue import NONE_LABEL, ToolSpec
from schemas.rows import Selection
from schemas.taskset import Message, last_user_text
from tasks.selectors.chat_options import answer_options
from tasks.tracing.exporter import RunTracing, planned_ids
from tasks.tracing.span_attributes import PREFIX, decision_attributes, link_attributes
from tasks.tracing.trace_ids import DECISION, LLM, ROOT, TraceIds

OFFLINE_SELECTORS = ("lexical", "embedding")
MS = 1_000_000


def selection_span_roles(row: Mapping[str, Any]) -> tuple[str, ...]:
    """The spans a row's trace has, besides the root (also what annotations may point at)."""
    if row["selector"] in OFFLINE_SELECTORS:
        return (DECISION,)
    return (DECISION, LLM) if row.get("router") else (LLM,)


def emit_selection_trace(tracing: RunTracing, row: Mapping[str, Any], selection: Selection,
                         messages: Sequence[Message], tools: Sequence[ToolSpec], prompt: str,
                         arm_options: Mapping[str, Any], ended_ns: int) -> None:
    tracer = tracing.tracer
    ids = TraceIds.of(row["run_id"], row["arm"], row["seed"], row["request_id"])
    link = link_attributes(row, "request_id", "expected")
    total_ns = int(max(row["latency_ms"], 0.0) * MS)
    start_ns = ended_ns - total_ns
    roles = selection_span_roles(row)
    with planned_ids(ids.trace_id, ids.span(ROOT)):
        root = tracer.start_span("select_tool", start_time=start_ns, attributes={
            **get_span_kind_attributes("chain"), **link,
            **get_input_attributes(last_user_text(messages), mime_type="text/plain"),
            **get_output_attributes(row["chosen"] if row["chosen"] is not None else "", mime_type="text/plain"),
            f"{PREFIX}.outcome": row["outcome"], f"{PREFIX}.correct": row["correct"],
            f"{PREFIX}.cache_hit": row["cache_hit"], f"{PREFIX}.n_tools": row["n_tools"],
            **({f"{PREFIX}.chosen": row["chosen"]} if row["chosen"] is not None else {}),
        })
    parent = trace.set_span_in_context(root)
    options = [tool.name for tool in tools] + [NONE_LABEL]
    cursor = start_ns
    if DECISION in roles:
        offline = row["selector"] in OFFLINE_SELECTORS
        decision_ns = total_ns if offline else int((selection.router_latency_ms or 0.0) * MS)
        pick = row["chosen"] if offline else selection.router_pick
        confidence = selection.confidence if offline else selection.router_confidence
        probabilities = selection.probabilities if offline else selection.router_probabilities
        model = row["model_id"] if offline else (selection.router or "").split(":", 1)[-1]  # 'kind:model'
        with planned_ids(ids.trace_id, ids.span(DECISION)):
            span = tracer.start_span("decide_tool", context=parent, start_time=cursor, attributes={
                **get_span_kind_attributes("decision"), **link,
                **get_decision_attributes(model_name=str(model)),
                **get_input_attributes({"request": last_user_text(messages), "options": options}),
                **get_output_attributes({"pick": pick, "confidence": confidence}),
                **decision_attributes(pick=pick, confidence=confidence, probabilities=probabilities,
                                      threshold=arm_options.get("threshold"), fallback=selection.fallback,
                                      options=options),
                f"{PREFIX}.decision.router": selection.router or f"{row['selector']}:{row['model_id']}",
                **({f"{PREFIX}.decided_by": selection.decided_by} if selection.decided_by else {}),
            })
        _end(span, row if offline else None, cursor + decision_ns)
        cursor += decision_ns
    if LLM in roles:
        with planned_ids(ids.trace_id, ids.span(LLM)):
            span = tracer.start_span("chat_completion", context=parent, start_time=cursor,
                                     attributes=_llm_attributes(row, selection, messages, tools, prompt, arm_options,
                                                                link))
        _end(span, row, ended_ns)
    _end(root, row, ended_ns)


def _llm_attributes(row: Mapping[str, Any], selection: Selection, messages: Sequence[Message],
                    tools: Sequence[ToolSpec], prompt: str, arm_options: Mapping[str, Any],
                    link: Mapping[str, Any]) -> dict[str, Any]:
    kind = row["selector"]
    chosen = row["chosen"]
    if chosen is not None and chosen != NONE_LABEL:
        reply = {"role": "assistant", "tool_calls": [
            {"function": {"name": chosen, "arguments": selection.arguments or "{}"}}]}
    else:
        reply = {"role": "assistant", "content": ""}
    tokens = {name: value for name, value in (("prompt", row["input_tokens"]), ("completion", row["output_tokens"]))
              if value is not None}
    if len(tokens) == 2:
        tokens["total"] = tokens["prompt"] + tokens["completion"]
    return {
        **get_span_kind_attributes("llm"), **link,
        **get_llm_attributes(
            provider=kind, system=kind, request_model_name=row["model_id"],
            response_model_name=row["served_model_id"] or None,
            invocation_parameters=json.dumps(answer_options(arm_options), sort_keys=True, default=str),
            input_messages=[{"role": "system", "content": prompt}]
            + [{"role": m.role, "content": m.content} for m in messages],
            output_messages=[reply], token_count=tokens or None,
            tools=[{"json_schema": {"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters}}} for t in tools],
        ),
        **({f"{PREFIX}.stop_reason": row["stop_reason"]} if row.get("stop_reason") else {}),
        f"{PREFIX}.retries": row["retries"],
        **({f"{PREFIX}.cost_usd": row["cost_usd"]} if row.get("cost_usd") is not None else {}),
    }


def _end(span, row: Mapping[str, Any] | None, end_ns: int) -> None:
    if row is not None and row["outcome"] in ("error", "invalid", "empty"):
        span.set_status(Status(StatusCode.ERROR, f"{row['outcome']}: {row.get('detail') or ''}"[:500]))
    span.end(end_time=end_ns)
