"""Execute one call against a surface's backend: invalid calls never reach it, refusals are error calls.

- the name is not an offered tool, or the arguments are not a JSON object valid under the tool's JSON
  schema (``jsonschema``, as for selection rows): *invalid*, not executed; the reason goes back to the agent;
- the backend raises ``ToolRefused`` (missing record, permission, bad state): an *error call*; its
  message goes back to the agent as the tool's result;
- the backend raises anything else: an error call too (its type and message go back), so a bug in a
  backend is a row, never a crashed run;
- otherwise the result goes back as compact JSON.
"""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic_core import to_jsonable_python

from tasks.selectors.tool_call_check import check_arguments
from tasks.surface.agent_types import ProposedCall, ToolResult
from tasks.surface.load_surface import ResolvedSurface
from tasks.surface.toolkit import Toolkit, ToolRefused

MAX_DETAIL = 400


def result_text(value: Any) -> str:
    return json.dumps(to_jsonable_python(value), ensure_ascii=False, separators=(",", ":"), default=str)


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


def execute_call(surface: ResolvedSurface, toolkit: Toolkit, call: ProposedCall) -> tuple[dict[str, Any], ToolResult]:
    """(CallRecord fields without call_index / turn / is_retry, the result sent back to the agent)."""
    offered = surface.offered(call.name)
    if offered is None:
        reason = f"tool '{call.name}' is not offered"
        arguments = call.arguments if isinstance(call.arguments, str) else result_text(call.arguments)
        return _invalid(call, None, arguments, reason)
    check = check_arguments(offered.spec, call.arguments)
    if not check.ok:
        return _invalid(call, offered.backend.name, check.arguments_json, check.detail or "invalid arguments")
    arguments = json.loads(check.arguments_json or "{}")
    marks = offered.backend.marks
    before = toolkit.upstream_reads
    started = time.perf_counter()
    error: str | None = None
    try:
        value = offered.backend.invoke(toolkit, arguments)
        content = result_text(value)
        records = count_records(value)
    except ToolRefused as refused:
        error = str(refused)[:MAX_DETAIL] or "refused"
    except Exception as crashed:  # a backend bug is an error call with its type, not a crashed run
        error = f"backend failed: {type(crashed).__name__}: {crashed}"[:MAX_DETAIL]
    elapsed = (time.perf_counter() - started) * 1000
    if error is not None:
        content, records = result_text({"error": error}), None
    fields = {
        "name": call.name, "tool": offered.backend.name, "arguments": check.arguments_json, "valid": True,
        "invalid_reason": None, "executed": True, "error": error is not None, "error_detail": error,
        "result_chars": len(content), "result_records": records,
        "irreversible": marks.irreversible and error is None, "handoff": marks.handoff and error is None,
        "upstream_reads": toolkit.upstream_reads - before, "backend_ms": elapsed,
    }
    return fields, ToolResult(call.call_id, call.name, content, error is not None)


def _invalid(call: ProposedCall, tool: str | None, arguments: str | None, reason: str) -> tuple[dict[str, Any], ToolResult]:
    content = result_text({"error": f"invalid call, not executed: {reason}"})
    fields = {
        "name": call.name, "tool": tool, "arguments": arguments, "valid": False, "invalid_reason": reason,
        "executed": False, "error": False, "error_detail": None, "result_chars": len(content),
        "result_records": None, "irreversible": False, "handoff": False, "upstream_reads": 0, "backend_ms": 0.0,
    }
    return fields, ToolResult(call.call_id, call.name, content, True)


def skipped_call(call: ProposedCall, tool: str | None) -> tuple[dict[str, Any], ToolResult]:
    """A call made after the task's call budget was spent: recorded, not executed."""
    content = result_text({"error": "not executed: the call budget of this task is spent"})
    arguments = call.arguments if isinstance(call.arguments, str) or call.arguments is None else result_text(call.arguments)
    fields = {
        "name": call.name, "tool": tool, "arguments": arguments, "valid": False, "invalid_reason": None,
        "executed": False, "error": False, "error_detail": None, "result_chars": 0, "result_records": None,
        "irreversible": False, "handoff": False, "upstream_reads": 0, "backend_ms": 0.0, "skipped_budget": True,
    }
    return fields, ToolResult(call.call_id, call.name, content, True)
