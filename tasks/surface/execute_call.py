"""Execute one call against a surface's backend and record it: a call whose name is not offered or whose
arguments fail the tool's JSON schema (or the backend's own validation) is *invalid* and never reaches it; a
refusal, or a toolkit raising, is an *error call* whose message goes back to the agent; a call with no answer
in time raises ``CallTimedOut`` and stops the task (docs/surface/writing-a-surface.md says how each is counted)."""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import to_jsonable_python

from tasks.selectors.providers.text_tool_calls import TextCall, text_call_detail
from tasks.surface.agent_types import ProposedCall, ToolResult, unfilled_reason
from tasks.surface.load_surface import ResolvedSurface
from tasks.surface.hung_tools import check_not_given_up, timed_out
from tasks.surface.surface_session import MAX_DETAIL, CallTimedOut, SurfaceSession
from tasks.surface.toolkit import BackendTool


def result_text(value: Any) -> str:
    return json.dumps(to_jsonable_python(value), ensure_ascii=False, separators=(",", ":"), default=str)


def arguments_text(arguments: Any) -> str | None:
    """A call's arguments as recorded: the text the agent gave, or its object as compact JSON."""
    return arguments if isinstance(arguments, str) or arguments is None else result_text(arguments)


def count_records(value: Any) -> int | None:
    """Records in a result: a list's length, a page's items, or the one list a result object holds."""
    value = to_jsonable_python(value)
    if isinstance(value, list):
        return len(value)
    if isinstance(value, dict):
        if isinstance(value.get("items"), list):
            return len(value["items"])
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) == 1:
            return len(lists[0])
    return None


def execute_call(surface: ResolvedSurface, session: SurfaceSession,
                 call: ProposedCall) -> tuple[dict[str, Any], ToolResult]:
    """(CallRecord fields without call_index / turn / is_retry, the result sent back to the agent). Raises
    SurfaceBroke when the surface itself failed (the caller records the call and stops the task)."""
    offered = surface.offered(call.name)
    if offered is None:
        return _invalid(call, None, arguments_text(call.arguments), f"tool '{call.name}' is not offered")
    backend = offered.backend
    from tasks.selectors.providers.tool_call_check import check_arguments  # jsonschema: when an agent first calls

    check = check_arguments(offered.spec, call.arguments)
    if not check.ok:
        reason = check.detail or "invalid arguments"
        return _invalid(call, backend, check.arguments_json,
                        unfilled_reason(call.unfilled, reason) if call.unfilled else reason)
    hung_tool = (surface.name, f"{backend.server or ''}/{backend.name}")
    check_not_given_up(*hung_tool, backend.name)  # a tool that hung GIVE_UP_AFTER times in the run: not called
    try:
        outcome = session.call(backend, json.loads(check.arguments_json or "{}"))
    except CallTimedOut as timeout:
        if not timeout.wall:  # the tool's own timeout, not the task's wall budget running out
            timed_out(*hung_tool)
        raise
    if outcome.invalid is not None:  # the backend's own validation rejected it: never executed
        return _invalid(call, backend, check.arguments_json, outcome.invalid, outcome.content, outcome.backend_ms)
    error = outcome.refused
    if error is not None:
        content, records = outcome.content or result_text({"error": error}), None
    else:
        content = outcome.content if outcome.content is not None else result_text(outcome.value)
        records = count_records(outcome.value)
    fields = _record(call.name, backend, check.arguments_json, valid=True, executed=True, error=error is not None,
                     error_detail=error, result_chars=len(content), result_records=records,
                     irreversible=backend.marks.irreversible and error is None,
                     handoff=backend.marks.handoff and error is None, upstream_reads=outcome.upstream_reads,
                     backend_ms=outcome.backend_ms)
    return fields, ToolResult(call.call_id, call.name, content, error is not None)


def _record(name: str, backend: BackendTool | None, arguments: str | None, **done: Any) -> dict[str, Any]:
    """CallRecord fields (without call_index / turn / is_retry) of a call that was not executed, with ``done``
    over them: what the call did instead."""
    return {"name": name, "tool": backend.name if backend else None, "arguments": arguments, "valid": False,
            "invalid_reason": None, "executed": False, "error": False, "error_detail": None, "result_chars": 0,
            "result_records": None, "irreversible": False, "handoff": False, "upstream_reads": 0,
            "backend_ms": 0.0, "server": backend.server if backend else None, **done}


def broken_call(call: ProposedCall, backend: BackendTool | None, detail: str) -> tuple[dict[str, Any], ToolResult]:
    """A call during which the surface failed (its server crashed or hung): an executed error call whose
    detail says so; the task stops with ``surface_error``."""
    content = result_text({"error": detail})
    fields = _record(call.name, backend, arguments_text(call.arguments), valid=True, executed=True, error=True,
                     error_detail=detail[:MAX_DETAIL], result_chars=len(content))
    return fields, ToolResult(call.call_id, call.name, content, True)


def _invalid(call: ProposedCall, backend: BackendTool | None, arguments: str | None, reason: str,
             said: str | None = None, backend_ms: float = 0.0) -> tuple[dict[str, Any], ToolResult]:
    """An invalid call: rejected before it ran (here, or by the backend's own validation, which ``said``)."""
    content = said or result_text({"error": f"invalid call, not executed: {reason}"})
    fields = _record(call.name, backend, arguments, invalid_reason=reason[:MAX_DETAIL], result_chars=len(content),
                     backend_ms=backend_ms)
    return fields, ToolResult(call.call_id, call.name, content, True)


def skipped_call(call: ProposedCall, backend: BackendTool | None,
                 spent: str = "the call budget of this task is spent") -> tuple[dict[str, Any], ToolResult]:
    """A call made after the task's call (or wall-time) budget was spent: recorded, not executed."""
    content = result_text({"error": f"not executed: {spent}"})
    fields = _record(call.name, backend, arguments_text(call.arguments), skipped_budget=True)
    return fields, ToolResult(call.call_id, call.name, content, True)


def text_call(surface: ResolvedSurface, found: TextCall) -> dict[str, Any]:
    """A tool call written as text in a reply (CallRecord fields without call_index / turn / is_retry):
    invalid and ``as_text``, never executed; named after the tool the markup names (as offered), else after
    the markup itself (``<tool_call>``), which then forms its own row in the per-tool counters."""
    offered = surface.offered(found.name) if found.name else None
    return _record(found.name or found.markup, offered.backend if offered else None, None,
                   invalid_reason=text_call_detail(found)[:MAX_DETAIL], as_text=True)
