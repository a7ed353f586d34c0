"""One trace per (run, arm, seed, request) of a selection run, built from what the unit landed.

- an offline selector (lexical, embedding) *is* a decision model: its trace is one DECISION span
  ``decide_tool`` (every option's probability, the confidence, the pick, the row's outcome);
- a hosted chat model: a root span (CHAIN) ``select_tool`` (the request in, the tool chosen out, the row's
  outcome) over ``decide_tool`` (DECISION) when the arm routes (the router's probabilities, confidence and
  pick, the gate's threshold and whether it fell back) and ``chat_completion`` (LLM: the messages, the
  tools in the seed's order, the tool call, tokens, latency, the model as served; OpenInference's own
  attribute helpers).

The row's checks are span annotations (``selection_annotations``):

- ``label_check`` (CODE): the row's outcome against the label, on the span whose choice the row scores
  (the decision span of an offline selector or of a router that decided, else the chat model's span);
- ``router_check`` (CODE): a routed row whose chat model chose (gated fallback, default, narrowed) also
  gets the router's own pick checked against the label, on the decision span;
- ``judge`` (LLM): the judge's majority and its votes, on the chat model's span;
- ``argument_check`` (CODE): on a request with expected arguments, the call's arguments against them
  (right / wrong, every parameter's outcome in the explanation; not_scored with the reason when another
  tool or no usable answer came back), on the chat model's span: the model whose call holds the arguments
  (a router picks a tool, never its arguments), beside the judge's verdict on the choice.

A selection run executes no tool, so its traces have no TOOL span. Span times: each trace ends when its
unit's answers were in hand and lasts the selection's recorded latency (the router's part first); a cache
hit keeps the latency of the call it repeats (``tooleval.cache_hit`` says so).
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from openinference.instrumentation import get_decision_attributes, get_llm_attributes, get_span_kind_attributes
from openinference.semconv.trace import OpenInferenceMimeTypeValues, SpanAttributes
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from schemas.catalogue import NONE_LABEL, ToolSpec
from schemas.selection.rows import Selection
from tasks.tracing.argument_check import NAME as ARGUMENT_CHECK, argument_check
from tasks.tracing.exporter import RunTracing, planned_ids
from tasks.tracing.span_attributes import (
    PREFIX,
    decision_attributes,
    decision_input,
    options_json,
    row_link_attributes,
    unit_metadata,
)
from tasks.tracing.trace_ids import DECISION, LLM, ROOT, TraceIds

OFFLINE_SELECTORS = ("lexical", "embedding", "position_biased")
MS = 1_000_000
TEXT, JSON = OpenInferenceMimeTypeValues.TEXT.value, OpenInferenceMimeTypeValues.JSON.value
INPUT_VALUE, INPUT_MIME = SpanAttributes.INPUT_VALUE, SpanAttributes.INPUT_MIME_TYPE
OUTPUT_VALUE, OUTPUT_MIME = SpanAttributes.OUTPUT_VALUE, SpanAttributes.OUTPUT_MIME_TYPE
FAILED = ("error", "invalid", "empty")


def selection_span_roles(row: Mapping[str, Any]) -> tuple[str, ...]:
    """The spans of a row's trace (annotations point at them by role)."""
    if row["selector"] in OFFLINE_SELECTORS:
        return (DECISION,)
    return (ROOT, DECISION, LLM) if row.get("router") else (ROOT, LLM)


def emit_selection_unit(tracing: RunTracing, unit: Mapping[str, Any]) -> None:
    """The traces and annotations of one landed unit, as traced_unit.py handed it over: ``items`` are
    (row, Selection, messages JSON, tools in the seed's order, whether the request has expected arguments),
    one per row."""
    records: list[dict[str, Any]] = []
    unit_tracer = None
    for row, selection, messages_json, tools, expects_arguments in unit["items"]:
        # a unit is one arm under one seed: every request is offered the same tools, unless the task set
        # gives each request its own (BFCL style), when the unit's constants are made per request
        if unit_tracer is None or unit_tracer.tools is not tools:  # one tuple per unit, pickled once
            unit_tracer = UnitTracer(tracing, row, tools, unit["prompt"], unit["invocation_parameters"],
                                     unit["threshold"])
        unit_tracer.emit(row, selection, messages_json, unit["ended_ns"])
        roles = selection_span_roles(row)
        tracing.built(len(roles))
        records.extend(selection_annotations(row, roles, expects_arguments))
    tracing.annotations.post(records)


class UnitTracer:
    """Emits the traces of one work unit: the attributes shared by its rows are computed once."""

    def __init__(self, tracing: RunTracing, first_row: Mapping[str, Any], tools: Sequence[ToolSpec], prompt: str,
                 invocation_parameters: str, threshold: float | None) -> None:
        """``invocation_parameters``: the arm's answer-changing options as JSON (``answer_options``)."""
        self.tracer = tracing.tracer
        self.tools = tools
        self.unit_meta = unit_metadata(first_row)
        self.options = [tool.name for tool in tools] + [NONE_LABEL]
        self.quoted_options = [json.dumps(option) for option in self.options]
        self.options_json = options_json(self.options)
        self.prompt = prompt
        self.threshold = threshold
        self.offline = first_row["selector"] in OFFLINE_SELECTORS
        self._decision_models: dict[str, dict[str, Any]] = {}
        self.decision_kind = {**get_span_kind_attributes("decision"), INPUT_MIME: JSON, OUTPUT_MIME: JSON}
        if not self.offline:
            kind = first_row["selector"]
            self.llm_static = {
                **get_span_kind_attributes("llm"),
                **get_llm_attributes(
                    provider=kind, system=kind, request_model_name=first_row["model_id"],
                    invocation_parameters=invocation_parameters,
                    tools=[{"json_schema": {"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters}}} for t in tools]),
            }
            self.system_message = {"role": "system", "content": prompt}

    def emit(self, row: Mapping[str, Any], selection: Selection, messages_json: str, ended_ns: int) -> None:
        """``messages_json``: the conversation as the request table holds it (JSON: role, content)."""
        ids = TraceIds.of(row["run_id"], row["arm"], row["seed"], row["request_id"])
        messages = json.loads(messages_json)
        request_text = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
        total_ns = int(max(row["latency_ms"], 0.0) * MS)
        start_ns = ended_ns - total_ns
        outcome = {"outcome": row["outcome"], "correct": row["correct"], "cache_hit": row["cache_hit"]}
        if self.offline:  # the selector is the decision model: one span is the whole trace
            link = row_link_attributes(row, "request_id", "expected", self.unit_meta, outcome)
            span = self._decide_tool(ids, None, start_ns, link, row["model_id"], request_text, row["chosen"],
                                     selection.confidence, selection.probabilities)
            _end(span, row, ended_ns)
            return
        link = row_link_attributes(row, "request_id", "expected", self.unit_meta)
        with planned_ids(ids.trace_id, ids.span(ROOT)):
            root = self.tracer.start_span("select_tool", start_time=start_ns, attributes={
                **get_span_kind_attributes("chain"), **row_link_attributes(row, "request_id", "expected",
                                                                           self.unit_meta, outcome),
                INPUT_VALUE: request_text, INPUT_MIME: TEXT,
                OUTPUT_VALUE: row["chosen"] if row["chosen"] is not None else "", OUTPUT_MIME: TEXT,
            })
        parent = trace.set_span_in_context(root)
        cursor = start_ns
        if selection.router:
            decision_ns = int((selection.router_latency_ms or 0.0) * MS)
            span = self._decide_tool(
                ids, parent, cursor, link, selection.router.split(":", 1)[-1],  # router: 'kind:model'
                request_text, selection.router_pick, selection.router_confidence, selection.router_probabilities,
                threshold=self.threshold, fallback=selection.fallback, extra={
                    f"{PREFIX}.decision.router": selection.router,
                    **({f"{PREFIX}.decided_by": selection.decided_by} if selection.decided_by else {})})
            _end(span, None, cursor + decision_ns)
            cursor += decision_ns
        with planned_ids(ids.trace_id, ids.span(LLM)):
            span = self.tracer.start_span("chat_completion", context=parent, start_time=cursor,
                                          attributes=self._llm_attributes(row, selection, messages, link))
        _end(span, row, ended_ns)
        _end(root, row, ended_ns)

    def _decide_tool(self, ids: TraceIds, parent: Any, start_ns: int, link: Mapping[str, Any], model: str,
                     request_text: str, pick: str | None, confidence: float | None, probabilities: Any,
                     threshold: float | None = None, fallback: Any = None,
                     extra: Mapping[str, Any] | None = None) -> Any:
        """The DECISION span ``decide_tool``: every option's probability, the confidence and the pick."""
        with planned_ids(ids.trace_id, ids.span(DECISION)):
            return self.tracer.start_span("decide_tool", context=parent, start_time=start_ns, attributes={
                **self.decision_kind, **link, **self.decision_model(model),
                INPUT_VALUE: decision_input(request_text, self.options_json),
                OUTPUT_VALUE: _pick_json(pick, confidence),
                **decision_attributes(pick=pick, confidence=confidence, probabilities=probabilities,
                                      threshold=threshold, fallback=fallback, options=self.options,
                                      quoted_options=self.quoted_options),
                **(extra or {}),
            })

    def decision_model(self, name: str) -> dict[str, Any]:
        if name not in self._decision_models:
            self._decision_models[name] = get_decision_attributes(model_name=name)
        return self._decision_models[name]

    def _llm_attributes(self, row: Mapping[str, Any], selection: Selection, messages: list[dict[str, str]],
                        link: Mapping[str, Any]) -> dict[str, Any]:
        chosen = row["chosen"]
        if chosen is not None and chosen != NONE_LABEL:
            reply = {"role": "assistant", "tool_calls": [
                {"function": {"name": chosen, "arguments": selection.arguments or "{}"}}]}
        else:
            reply = {"role": "assistant", "content": ""}
        tokens = {name: value for name, value in (("prompt", row["input_tokens"]),
                                                  ("completion", row["output_tokens"])) if value is not None}
        if len(tokens) == 2:
            tokens["total"] = tokens["prompt"] + tokens["completion"]
        return {
            **self.llm_static, **link,
            **get_llm_attributes(
                response_model_name=row["served_model_id"] or row["model_id"],
                input_messages=[self.system_message] + messages,
                output_messages=[reply], token_count=tokens or None),
            **({f"{PREFIX}.stop_reason": row["stop_reason"]} if row.get("stop_reason") else {}),
            f"{PREFIX}.retries": row["retries"],
            **({f"{PREFIX}.cost_usd": row["cost_usd"]} if row.get("cost_usd") is not None else {}),
        }


def _pick_json(pick: str | None, confidence: float | None) -> str:
    return f'{{"pick": {json.dumps(pick)}, "confidence": {json.dumps(confidence)}}}'


def _end(span, row: Mapping[str, Any] | None, end_ns: int) -> None:
    if row is not None and row["outcome"] in FAILED:
        span.set_status(Status(StatusCode.ERROR, f"{row['outcome']}: {row.get('detail') or ''}"[:500]))
    span.end(end_time=end_ns)


def selection_annotations(row: Mapping[str, Any], roles: tuple[str, ...],
                          expects_arguments: bool = False) -> list[dict[str, Any]]:
    """The annotations of one selection row (Phoenix's SpanAnnotationData shape); ``expects_arguments``: the
    request has expected arguments (its argument check is annotated, scored or not)."""
    ids = TraceIds.of(row["run_id"], row["arm"], row["seed"], row["request_id"])
    scored = DECISION if (LLM not in roles or row.get("decided_by") == "router") else LLM
    chosen = row["chosen"] if row["chosen"] is not None else "(no usable answer)"
    records = [{
        "name": "label_check", "annotator_kind": "CODE", "span_id": ids.span_hex(scored),
        "result": {"label": row["outcome"], "score": 1.0 if row["correct"] else 0.0,
                   "explanation": f"expected {row['expected']}, chose {chosen}"},
        "metadata": {"expected": row["expected"], "chosen": row["chosen"]},
    }]
    if DECISION in roles and scored != DECISION and row.get("router_pick") is not None:
        right = row["router_pick"] == row["expected"]
        records.append({
            "name": "router_check", "annotator_kind": "CODE", "span_id": ids.span_hex(DECISION),
            "result": {"label": "right" if right else "wrong", "score": 1.0 if right else 0.0,
                       "explanation": f"expected {row['expected']}, the router picked {row['router_pick']}"},
            "metadata": {"expected": row["expected"], "router_pick": row["router_pick"]},
        })
    if row.get("judge_verdict") is not None and LLM in roles:
        votes = list(row.get("judge_votes") or [])
        records.append({
            "name": "judge", "annotator_kind": "LLM", "span_id": ids.span_hex(LLM),
            "result": {"label": row["judge_verdict"],
                       "explanation": f"majority {row['judge_verdict']} of votes {', '.join(votes)}",
                       **({"score": sum(v == "right" for v in votes) / len(votes)} if votes else {})},
            "metadata": {"votes": votes},
        })
    if expects_arguments and LLM in roles:  # the chat model's call holds the arguments checked
        check = argument_check(row)
        records.append({"name": ARGUMENT_CHECK, "annotator_kind": "CODE", "span_id": ids.span_hex(LLM),
                        "result": {k: v for k, v in check.items() if k != "metadata"}, "metadata": check["metadata"]})
    return records
