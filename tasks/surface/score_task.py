"""Score a run on its outcome: the calls the backend executed, the final state (or what probes read of
it through the surface), the final reply.

Never on the transcript: the order of calls, the path taken and the number of steps do not matter, only
that the required calls happened (executed, not refused), the forbidden ones did not (reached the backend,
refused or not), the state ended as asserted and the reply says what it must.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Sequence

from schemas.surface.task import Assertion, CallAssertion, Matcher

if TYPE_CHECKING:
    from schemas.surface.rows import CallRecord

_MISSING = object()


def matches(matcher: Matcher, value: Any = _MISSING) -> bool:
    """Does ``value`` (``_MISSING`` when the key is not there) satisfy the matcher?"""
    present = value is not _MISSING and value is not None
    if matcher.kind == "absent":
        return not present
    if not present:
        return matcher.kind == "equals" and matcher.value is None and value is None
    if matcher.kind == "equals":
        return value == matcher.value
    if matcher.kind == "one_of":
        return any(value == option for option in matcher.value)
    if matcher.kind == "contains":
        if isinstance(value, str):
            return str(matcher.value) in value
        if isinstance(value, (list, tuple)):
            return matcher.value in value
        if isinstance(value, dict):
            return matcher.value in value.keys()
        return False
    if matcher.kind == "regex":
        return isinstance(value, str) and re.search(matcher.value, value) is not None
    raise ValueError(f"unknown matcher kind {matcher.kind}")


def value_at(state: Any, parts: Sequence[str]) -> Any:
    """The value at a dotted path; a part names a key, a list index, or the ``id`` (else the ``name``) of a
    record in a list."""
    node = state
    for part in parts:
        if isinstance(node, dict):
            if part not in node:
                return _MISSING
            node = node[part]
        elif isinstance(node, list):
            if part.lstrip("-").isdigit() and -len(node) <= int(part) < len(node):
                node = node[int(part)]
            else:
                found = ([r for r in node if isinstance(r, dict) and str(r.get("id")) == part]
                         or [r for r in node if isinstance(r, dict) and str(r.get("name")) == part])
                if not found:
                    return _MISSING
                node = found[0]
        else:
            return _MISSING
    return node


def _arguments(call: CallRecord) -> dict[str, Any]:
    try:
        parsed = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def call_matches(expected: CallAssertion, call: CallRecord) -> bool:
    if call.tool != expected.tool:
        return False
    arguments = _arguments(call)
    return all(matches(m, arguments.get(name, _MISSING)) for name, m in expected.args.items())


def _describe(call: CallAssertion) -> str:
    args = ", ".join(f"{name} {m.describe()}" for name, m in call.args.items())
    return f"{call.tool}({args})"


def score_outcome(assertion: Assertion, calls: Sequence[CallRecord], final_state: Any,
                  final_reply: str | None, answers: Sequence[Any] = ()) -> tuple[bool, list[str]]:
    """(success, the parts that did not hold, in words). ``answers``: what each probe read (a CallOutcome),
    or why it read nothing (a string), in the assertion's order."""
    failed: list[str] = []
    done = [c for c in calls if c.executed and not c.error]
    reached = [c for c in calls if c.executed]
    for expected in assertion.required_calls:
        if not any(call_matches(expected, c) for c in done):
            failed.append(f"call {_describe(expected)} did not happen")
    for forbidden in assertion.not_called:
        if any(call_matches(forbidden, c) for c in reached):
            failed.append(f"call {_describe(forbidden)} happened")
    for state in assertion.state:
        value = value_at(final_state, state.parts)
        if not matches(state.matcher, value):
            shown = "missing" if value is _MISSING else json.dumps(value, default=str)[:80]
            failed.append(f"state {state.path} {state.matcher.describe()} (is {shown})")
    if assertion.reply is not None and not matches(assertion.reply, final_reply if final_reply else _MISSING):
        failed.append(f"reply {assertion.reply.describe()}")
    for probe, answer in zip(assertion.probes, answers):
        reason = answer if isinstance(answer, str) else (answer.refused or answer.invalid)
        if reason:
            failed.append(f"{probe.describe()} read nothing: {reason}"[:300])
            continue
        value = value_at(answer.value, probe.parts) if probe.parts else (answer.content or answer.value)
        if not matches(probe.matcher, value):
            shown = "missing" if value is _MISSING else json.dumps(value, default=str)[:80]
            failed.append(f"{probe.describe()} {probe.matcher.describe()} (is {shown})")
    return not failed, failed
