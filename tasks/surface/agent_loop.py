"""The agent loop for one (arm, seed, task): offer the tools in the seed's order, execute every call the
agent makes (parallel calls in the order given), send the results back, until the agent stops, the task's
budget is spent, or a turn fails. Then score the outcome.

Budgets are limits with a recorded stop reason (as inspect_ai's): calls beyond ``max_calls`` are recorded as
``skipped_budget``, not executed; ``max_turns``, ``max_tokens`` and ``max_wall_s`` are checked before each
turn, ``max_wall_s`` also before and during each call. A call cut by a time limit, or a failed surface, leaves
the session discarded: neither probed nor scored. A reply that writes a tool call as text ends the run with
``text_call`` (docs/surface/agents.md: every stop reason)."""

from __future__ import annotations

import json
import time
from typing import Any

from schemas.catalogue import ToolSpec
from schemas.surface.rows import CallRecord, TaskOutcome
from schemas.surface.task import SurfaceTask
from tasks.surface.agent_types import Agent, ToolResult
from tasks.surface.execute_call import broken_call, execute_call, skipped_call, text_call
from tasks.surface.load_surface import ResolvedSurface
from tasks.surface.score_task import score_outcome
from tasks.surface.surface_session import CallOutcome, CallTimedOut, SurfaceBroke, SurfaceSession

MAX_REPLY_CHARS = 2000


def retry_key(name: str, arguments: Any) -> str:
    """Tool name and arguments, canonical: key order and spacing do not make two calls different."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return f"{name}\x00raw:{arguments}"
    return f"{name}\x00{json.dumps(arguments, sort_keys=True, separators=(',', ':'), default=str)}"


def _add(total: int | None, value: int | None) -> int | None:
    return value if total is None else total + (value or 0)


def run_task(agent: Agent, surface: ResolvedSurface, task: SurfaceTask, fixtures: dict[str, Any],
             tools: tuple[ToolSpec, ...], prompt: str) -> TaskOutcome:
    """Run one task to its end and score it. Never raises for what the agent or the backend did; a failed
    surface (an MCP server that cannot start, crashes or hangs) stops the run with ``surface_error``."""
    started = time.perf_counter()
    budget = task.budget
    calls: list[CallRecord] = []
    seen: set[str] = set()
    turns, executed_or_invalid = 0, 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    price_version = served = final_reply = detail = None
    provider_retries, agent_ms, unseen = 0, 0.0, 0
    stop: str | None = None
    session = None
    broken = False
    """The surface failed or a call was cut: the session is discarded, its state neither probed nor scored."""
    answers: list[CallOutcome | str] = []
    wall_deadline = started + budget.max_wall_s if budget.max_wall_s is not None else None
    try:
        session = surface.backend.open(fixtures)
        if wall_deadline is not None and hasattr(session, "wall_deadline"):
            session.wall_deadline = wall_deadline  # a toolkit session cuts a call that outlives the budget
        # an agent that reads the task's fixtures (the offline baseline: paths and ids) is given them
        agent_session = (agent.start(task, tools, prompt, fixtures=fixtures) if getattr(agent, "reads_fixtures", False)
                         else agent.start(task, tools, prompt))
        while stop is None:
            if turns >= budget.turns:
                stop = "max_turns"
                break
            if budget.max_tokens is not None and (input_tokens or 0) + (output_tokens or 0) >= budget.max_tokens:
                stop = "max_tokens"
                break
            if budget.max_wall_s is not None and time.perf_counter() - started >= budget.max_wall_s:
                stop = "max_wall"
                break
            asked = time.perf_counter()
            turn = agent_session.next_turn()
            agent_ms += (time.perf_counter() - asked) * 1000
            turns += 1
            input_tokens, output_tokens = _add(input_tokens, turn.input_tokens), _add(output_tokens, turn.output_tokens)
            if turn.cost_usd is not None:
                cost = (cost or 0.0) + turn.cost_usd
            price_version = turn.price_version or price_version
            served = turn.served_model or served
            provider_retries += turn.provider_retries
            unseen += turn.results_unseen
            if turn.failed is not None:
                stop, detail = turn.failed, turn.detail
                break
            if turn.text.strip():
                final_reply = turn.text[:MAX_REPLY_CHARS]
            if not turn.calls:
                if turn.text_call is not None:  # a call written as text: invalid, nothing to execute or answer
                    fields = text_call(surface, turn.text_call)
                    key = retry_key(fields["name"], None)
                    calls.append(CallRecord(call_index=len(calls) + 1, turn=turns, is_retry=key in seen, **fields))
                    seen.add(key)
                    stop = "text_call"
                else:
                    stop = "model_stop"
                break
            results: list[ToolResult] = []
            for proposed in turn.calls:
                offered = surface.offered(proposed.name)
                if executed_or_invalid >= budget.max_calls:
                    fields, result = skipped_call(proposed, offered.backend if offered else None)
                    stop = "max_calls"
                elif wall_deadline is not None and time.perf_counter() >= wall_deadline:
                    fields, result = skipped_call(proposed, offered.backend if offered else None,
                                                  "the wall-time budget (max_wall_s) of this task is spent")
                    stop = stop or "max_wall"
                else:
                    try:
                        fields, result = execute_call(surface, session, proposed)
                    except SurfaceBroke as broke:
                        fields, result = broken_call(proposed, offered.backend if offered else None, str(broke))
                        wall = isinstance(broke, CallTimedOut) and broke.wall
                        stop, detail, broken = ("max_wall" if wall else "surface_error"), str(broke), True
                    executed_or_invalid += 1
                key = retry_key(proposed.name, proposed.arguments)
                calls.append(CallRecord(call_index=len(calls) + 1, turn=turns,
                                        is_retry=key in seen and not fields.get("skipped_budget", False), **fields))
                seen.add(key)
                results.append(result)
                if broken:
                    break
            if stop is None:
                agent_session.feed(results)
        if not broken:
            if hasattr(session, "wall_deadline"):
                session.wall_deadline = None  # probes read the end state after the run: call_timeout_s alone
            answers = read_probes(surface, session, task)
    except SurfaceBroke as broke:
        wall = isinstance(broke, CallTimedOut) and broke.wall
        stop, detail, broken = ("max_wall" if wall else "surface_error"), str(broke), True
    finally:
        if session is not None:
            left = session.close(broken=broken)  # an MCP surface's failed declared teardown, to be recorded
            if left:
                detail = f"{detail}; {left}" if detail else left
    if broken:  # the outcome cannot be read from a surface that failed, or a state a cut call may still change
        why = "a call was cut" if stop == "max_wall" else "the surface failed"
        success, failed = False, [f"not scored: {why} ({detail})"[:MAX_REPLY_CHARS]]
    else:
        assert session is not None
        success, failed = score_outcome(task.assertion, calls, session.end_state(), final_reply, answers)
    return TaskOutcome(
        task_id=task.id, success=success, failed_assertions=failed, stop_reason=stop, detail=detail, n_turns=turns,
        calls=calls, final_reply=final_reply, input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost,
        price_version=price_version, wall_ms=(time.perf_counter() - started) * 1000, agent_ms=agent_ms,
        provider_retries=provider_retries, served_model_id=served, results_unseen_turns=unseen)


def read_probes(surface: ResolvedSurface, session: SurfaceSession, task: SurfaceTask) -> list[CallOutcome | str]:
    """The answer of each of the task's probes (in order), or why it has none; SurfaceBroke passes through."""
    answers: list[CallOutcome | str] = []
    tools = surface.backend_tools
    for probe in task.assertion.probes:
        tool = tools.get(probe.probe.tool)
        answers.append(session.call(tool, dict(probe.probe.args)) if tool is not None
                       else f"'{probe.probe.tool}' is not a tool of surface {surface.name}")
    return answers
