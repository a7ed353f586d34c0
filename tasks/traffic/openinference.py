"""OpenInference trace exports as production turns: one turn per trace.

Accepted shapes, one JSON object per line (or one object for the whole file):
- OTLP/JSON as the OpenTelemetry file exporter writes it: ``{"resourceSpans": [{"scopeSpans": [{"spans":
  [...]}]}]}`` with ``traceId``, ``spanId``, ``parentSpanId``, ``startTimeUnixNano`` and ``attributes`` as
  ``[{"key": ..., "value": {"stringValue": ...}}]``;
- flat span records (Phoenix-style): ``{"context": {"trace_id", "span_id"}, "parent_id", "start_time",
  "span_kind", "attributes": {...}}`` with attributes nested or dotted.

Read per trace, with the OpenInference semantic conventions:
- the first LLM span (by start time) gives the conversation: ``llm.input_messages.<i>.message.role`` /
  ``.content``; its last user message is the request, the user and assistant messages before it are the
  earlier turns (system and tool messages are left out). Without LLM input messages, the root span's
  ``input.value`` is the request;
- the tool called first: the first tool call in that span's output
  (``llm.output_messages.<i>.message.tool_calls.<j>.tool_call.function.name``), else the earliest TOOL span's
  ``tool.name``; an LLM output with no tool call means 'none' (and an empty reply when it has no text);
- ``session.id`` is the conversation; outcome signals come from the ``metadata`` attribute (JSON) keys
  ``user_retried``, ``handed_to_human``, ``empty_reply`` where the team records them.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from schemas.catalogue import NONE_LABEL
from tasks.files.input_errors import InputError, Problem
from tasks.traffic.turn_checks import MAX_PROBLEMS, validate_turns

_INPUT = re.compile(r"^llm\.input_messages\.(\d+)\.message\.(role|content)$")
_OUTPUT_TOOL = re.compile(r"^llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.function\.name$")
_OUTPUT_CONTENT = re.compile(r"^llm\.output_messages\.(\d+)\.message\.(content|role)$")
SIGNALS = ("user_retried", "handed_to_human", "empty_reply")


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    start: datetime
    attributes: dict[str, Any]
    where: str

    @property
    def kind(self) -> str:
        return str(self.attributes.get("openinference.span.kind", "")).upper()


def _otlp_value(value: dict[str, Any]) -> Any:
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_otlp_value(v) for v in value["arrayValue"].get("values", [])]
    return None


def _flatten(attributes: Any, prefix: str = "") -> dict[str, Any]:
    """Nested attribute objects and lists as dotted keys (``llm.input_messages.0.message.role``)."""
    flat: dict[str, Any] = {}
    if isinstance(attributes, dict):
        for key, value in attributes.items():
            flat.update(_flatten(value, f"{prefix}{key}."))
    elif isinstance(attributes, list) and attributes and all(isinstance(v, dict) for v in attributes):
        for index, value in enumerate(attributes):
            flat.update(_flatten(value, f"{prefix}{index}."))
    else:
        flat[prefix[:-1]] = attributes
    return flat


def _time(value: Any) -> datetime:
    if isinstance(value, (int, float)) or (isinstance(value, str) and value.isdigit()):
        return datetime.fromtimestamp(int(value) / 1e9, tz=timezone.utc)
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed.astimezone(timezone.utc)


def _spans_of_record(record: dict[str, Any], where: str) -> Iterator[Span]:
    if "resourceSpans" in record:
        for resource in record.get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    attributes = {a["key"]: _otlp_value(a.get("value", {})) for a in span.get("attributes", [])}
                    yield Span(trace_id=span["traceId"], span_id=span["spanId"],
                               parent_id=span.get("parentSpanId") or None, start=_time(span["startTimeUnixNano"]),
                               attributes=attributes, where=where)
        return
    context = record.get("context") or {}
    attributes = _flatten(record.get("attributes") or {})
    if record.get("span_kind") and "openinference.span.kind" not in attributes:
        attributes["openinference.span.kind"] = record["span_kind"]
    yield Span(trace_id=context.get("trace_id") or record["trace_id"], span_id=context.get("span_id") or record["span_id"],
               parent_id=record.get("parent_id") or None, start=_time(record["start_time"]),
               attributes=attributes, where=where)


def read_spans(path: Path) -> list[Span]:
    if not path.is_file():
        raise InputError.one(str(path), "", "file-exists", "trace export not found")
    text = path.read_text()
    stripped = text.lstrip()
    chunks: list[tuple[str, str]]
    if stripped.startswith("{") and "\n{" not in stripped.strip():
        chunks = [("line 1", stripped)]
    else:
        chunks = [(f"line {n}", line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    spans: list[Span] = []
    problems: list[Problem] = []
    for where, chunk in chunks:
        try:
            record = json.loads(chunk)
            spans.extend(_spans_of_record(record, where))
        except json.JSONDecodeError as error:
            problems.append(Problem(str(path), where, "json", error.msg))
        except (KeyError, TypeError, ValueError) as error:
            problems.append(Problem(str(path), where, "span-schema",
                                    f"a span needs trace and span ids and a start time ({error!r})"))
    if problems:
        raise InputError(problems[:MAX_PROBLEMS])
    return spans


def _input_messages(attributes: dict[str, Any]) -> list[tuple[str, str]]:
    by_index: dict[int, dict[str, str]] = defaultdict(dict)
    for key, value in attributes.items():
        if match := _INPUT.match(key):
            by_index[int(match[1])][match[2]] = "" if value is None else str(value)
    return [(m.get("role", ""), m.get("content", "")) for _, m in sorted(by_index.items())]


def _output(attributes: dict[str, Any]) -> tuple[list[str], str | None, bool]:
    """(tool names in call order, concatenated text or None, whether any output was recorded)."""
    calls: list[tuple[int, int, str]] = []
    texts: list[tuple[int, str]] = []
    recorded = False
    for key, value in attributes.items():
        if match := _OUTPUT_TOOL.match(key):
            calls.append((int(match[1]), int(match[2]), str(value)))
            recorded = True
        elif match := _OUTPUT_CONTENT.match(key):
            recorded = True
            if match[2] == "content" and value:
                texts.append((int(match[1]), str(value)))
    if "output.value" in attributes:
        recorded = True
    text = " ".join(t for _, t in sorted(texts)) or None
    return [name for _, _, name in sorted(calls)], text, recorded


def _signals(spans: list[Span]) -> dict[str, bool]:
    found: dict[str, bool] = {}
    for span in spans:
        metadata = span.attributes.get("metadata")
        if isinstance(metadata, str):
            try:
                metadata = json.loads(metadata)
            except json.JSONDecodeError:
                metadata = None
        for key in SIGNALS:
            value = (metadata or {}).get(key) if isinstance(metadata, dict) else None
            value = span.attributes.get(f"metadata.{key}", value)
            if isinstance(value, bool):
                found.setdefault(key, value)
    return found


def turn_record(trace_id: str, spans: list[Span]) -> tuple[str, dict[str, Any]]:
    """One trace as a turn record (validated by the caller)."""
    spans = sorted(spans, key=lambda s: s.start)
    where = f"trace {trace_id} ({spans[0].where})"
    llm = [s for s in spans if s.kind == "LLM" and _input_messages(s.attributes)]
    messages: list[tuple[str, str]] = _input_messages(llm[0].attributes) if llm else []
    conversation = [(role, content) for role, content in messages if role in ("user", "assistant")]
    users = [i for i, (role, _) in enumerate(conversation) if role == "user"]
    record: dict[str, Any] = {"turn_id": trace_id, "time": spans[0].start}
    if users:
        last = users[-1]
        record["user_message"] = conversation[last][1]
        record["earlier_turns"] = [{"role": r, "content": c} for r, c in conversation[:last]]
    else:
        roots = [s for s in spans if s.parent_id is None] or spans
        value = roots[0].attributes.get("input.value")
        if value is not None:
            record["user_message"] = str(value)
    first_tool: str | None = None
    if llm:
        tools, text, recorded = _output(llm[0].attributes)
        if tools:
            first_tool = tools[0]
        elif recorded:
            first_tool = NONE_LABEL
            record["empty_reply"] = not (text or "").strip()
    if first_tool is None:
        tool_spans = [s for s in spans if s.kind == "TOOL" and s.attributes.get("tool.name")]
        first_tool = str(tool_spans[0].attributes["tool.name"]) if tool_spans else NONE_LABEL
    record["first_tool"] = first_tool
    sessions = [s.attributes["session.id"] for s in spans if s.attributes.get("session.id")]
    if sessions:
        record["conversation_id"] = str(sessions[0])
    record.update(_signals(spans))
    return where, record


def read_openinference(path: Path):
    """Every trace of the export as a validated ``ProductionTurn``."""
    by_trace: dict[str, list[Span]] = defaultdict(list)
    for span in read_spans(path):
        by_trace[span.trace_id].append(span)
    records = [turn_record(trace_id, spans) for trace_id, spans in by_trace.items()]
    problems = [Problem(str(path), where, "trace-user-message",
                        "no user message: neither llm.input_messages with a user turn nor input.value")
                for where, record in records if "user_message" not in record]
    if problems:
        raise InputError(problems[:MAX_PROBLEMS])
    return validate_turns(records, str(path))
