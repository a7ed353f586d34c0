"""Run and land one work unit: outcomes from the task cache, fresh runs for the rest, two Parquet files.

Each fresh outcome is cached the moment its run ends, so a resumed unit repeats only the tasks still running.
Hosted agents run ``concurrency`` tasks at once inside their endpoint's prefix lane (tasks/run/prefix_lanes.py);
the offline baseline runs them one after another. Nothing an agent or a backend does raises out of here: a
harness failure lands as a row stopped on 'error' (never cached)."""

from __future__ import annotations

import time
from contextlib import nullcontext
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, ContextManager

from schemas.arrow import to_arrow_table
from schemas.catalogue import ToolSpec
from schemas.surface.rows import FAILED_STOPS, TaskCallRow, TaskOutcome, TaskRunRow
from schemas.surface.task import SurfaceTask
from tasks.core_records import RunContext, UnitResult, WorkUnit
from tasks.run.cache_keys import digest, keyed_options, tools_fingerprint
from tasks.run.item_counter import item_finished
from tasks.run.permute_tools import permute_tools
from tasks.run.prefix_lanes import NO_LANE, LaneHold, lane_for
from tasks.run.result_cache import CacheSpec, ResultCache
from tasks.selectors.arm_options import answer_options
from tasks.selectors.providers.call_budget import RunLedger
from tasks.selectors.providers.chat_options import DEFAULT_CONCURRENCY
from tasks.surface.agent_types import BASELINE_FILLING, HOSTED_AGENT_WIRE, Agent
from tasks.surface.arms import SurfaceArm
from tasks.surface.load_tasks import TaskVersion
from tasks.surface.transform_tools import label_as_offered
from tasks.surface.tool_needs import forbidden_tools, needed_tools
from tasks.surface.wanted_actions import classify_calls

OUTCOMES = CacheSpec(table="task_outcomes", column="outcome", model=TaskOutcome,
                     keep=lambda outcome: outcome.stop_reason not in FAILED_STOPS)
"""The task cache: a task's outcome under one arm and tool order; runs that could not be carried out (a
provider error, the run's budget) are never kept."""


@dataclass(frozen=True)
class TaskInput:
    """A task of the version with its merged fixtures: what a unit's batch holds."""

    task: SurfaceTask
    fixtures: dict[str, Any]


@dataclass(frozen=True)
class PlannedTask(TaskInput):
    """A task as one arm under one seed runs it: with its outcome's cache key."""

    cache_key: str


def task_inputs(version: TaskVersion) -> tuple[TaskInput, ...]:
    """What a version's task units are batches of: its tasks, each with its fixtures merged."""
    return tuple(TaskInput(task, version.fixtures(task)) for task in version.tasks)


def agent_fingerprint(arm: SurfaceArm) -> str:
    """What about the arm, besides its tools and the task, changes an outcome: the agent, its pinned model,
    its answer-changing options and, for agents that read it, the prompt. The baseline does not read the
    prompt, so two of its arms that differ only in the prompt share their outcomes."""
    parts = [arm.agent, arm.model_id, keyed_options(answer_options(arm.options)),
             arm.prompt_text if arm.reads_prompt else None]
    return digest([*parts, BASELINE_FILLING if arm.agent == "baseline" else HOSTED_AGENT_WIRE])


def task_cache_key(arm: SurfaceArm, tools: tuple[ToolSpec, ...], task: SurfaceTask, fixtures: dict[str, Any],
                   unit_part: tuple[str, str] | None = None) -> str:
    """``unit_part``: the arm's and the tools' fingerprints when the caller has them (``plan_tasks`` works
    them out once per unit, not once per task); the key is the same either way."""
    agent, offered = unit_part or (agent_fingerprint(arm), tools_fingerprint(tools))
    return digest([agent, offered, arm.surface.surface_hash, task_identity(task), fixtures])


def task_identity(task: SurfaceTask) -> dict[str, Any]:
    """The task as its cache key reads it: a task without probes keys as it did before probes existed, so
    outcomes cached by earlier builds stay valid. ``wants`` and ``forbids`` never change an outcome (they
    classify its calls when its rows are made), so they stay out of the key."""
    written = task.model_dump(mode="json", by_alias=True, exclude={"wants", "forbids"})
    if not task.assertion.probes:
        written["assert"].pop("probes", None)
    return written


def plan_tasks(unit: WorkUnit) -> tuple[tuple[ToolSpec, ...], list[PlannedTask]]:
    """The surface's tools in the unit's seed order, and each task of the batch with its cache key."""
    tools = permute_tools(unit.arm.surface.specs, unit.seed)
    unit_part = (agent_fingerprint(unit.arm), tools_fingerprint(tools))
    return tools, [PlannedTask(item.task, item.fixtures,
                               task_cache_key(unit.arm, tools, item.task, item.fixtures, unit_part))
                   for item in unit.batch]


def make_agent(arm: SurfaceArm, ledger: RunLedger) -> Agent:
    """The arm's agent; its module (the baseline's routers and numpy, the providers' clients) is imported here,
    when a unit first runs a task, not by the commands that only read this module (``tooleval validate``)."""
    if arm.agent == "baseline":
        from tasks.surface.baseline_agent import BaselineAgent

        return BaselineAgent(arm.model_id, arm.options)
    from tasks.surface.chat_agent import ChatAgent

    return ChatAgent(arm.agent, arm.model_id, arm.options, ledger)


def _guarded(agent: Agent, unit: WorkUnit, tools: tuple[ToolSpec, ...], planned: PlannedTask) -> TaskOutcome:
    from tasks.surface.agent_loop import run_task

    started = time.perf_counter()
    try:
        return run_task(agent, unit.arm.surface, planned.task, planned.fixtures, tools, unit.arm.prompt_text)
    except Exception as error:  # a harness bug must not sink the unit: it lands as a row, never cached
        return TaskOutcome(task_id=planned.task.id, success=False, stop_reason="error",
                           detail=f"harness failed: {type(error).__name__}: {error}"[:400], n_turns=0,
                           wall_ms=(time.perf_counter() - started) * 1000)


def run_fresh(agent: Agent, unit: WorkUnit, tools: tuple[ToolSpec, ...], todo: list[PlannedTask],
              cache: ResultCache[TaskOutcome], place: LaneHold = NO_LANE) -> dict[str, TaskOutcome]:
    """Run the tasks not in the cache; store each outcome as soon as it is done. ``place`` (the unit's prefix
    lane) is left once the unfinished tasks are too few to fill the endpoint's concurrency."""
    done: dict[str, TaskOutcome] = {}
    concurrency = 1 if unit.arm.agent == "baseline" else int(unit.arm.options.get("concurrency", DEFAULT_CONCURRENCY))
    if concurrency <= 1 or len(todo) <= 1:
        for planned in todo:
            done[planned.cache_key] = outcome = _guarded(agent, unit, tools, planned)
            cache.put(planned.cache_key, outcome)
            item_finished(unit.label)
        return done
    with ThreadPoolExecutor(max_workers=min(concurrency, len(todo)), thread_name_prefix="task") as pool:
        futures = {pool.submit(_guarded, agent, unit, tools, planned): planned for planned in todo}
        try:
            for finished, future in enumerate(as_completed(futures), start=1):
                planned = futures[future]
                done[planned.cache_key] = outcome = future.result()
                cache.put(planned.cache_key, outcome)
                item_finished(unit.label)
                place.tail(len(todo) - finished, concurrency)
        finally:
            for future in futures:
                future.cancel()
    return done


def prefix_lane(agent: Agent, unit: WorkUnit, ctx: RunContext) -> ContextManager[LaneHold]:
    """The endpoint's prefix lane for a hosted agent's unit, keyed by (rung, seed) as selection's units are;
    nothing to hold for the offline baseline."""
    caller = getattr(agent, "caller", None)
    if caller is None or not ctx.prefix_lanes:
        return nullcontext(NO_LANE)
    return lane_for((caller.kind, caller.endpoint)).hold((unit.arm.rung, unit.seed))


def run_rows(unit: WorkUnit, tools: tuple[ToolSpec, ...], planned: PlannedTask, outcome: TaskOutcome,
             cache_hit: bool, ctx: RunContext) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    arm, task = unit.arm, planned.task
    calls = list(outcome.calls)
    counted = [c for c in calls if not c.skipped_budget]
    wanted = classify_calls(task, calls, outcome.success)
    unwanted = [c for c, (ok, _) in zip(calls, wanted) if not ok and not c.skipped_budget]
    first = counted[0].name if counted else None
    intent = label_as_offered(task.intent, arm.surface.tools)  # as first_tool is spelled: the name offered
    row = {
        "run_id": ctx.run_id, "experiment": ctx.experiment, "arm": arm.name, "rung": arm.rung, "seed": unit.seed,
        "taskset": unit.taskset, "taskset_version": unit.taskset_version, "task_id": task.id, "slice": task.slice,
        "intent": intent, "surface": arm.surface.name, "prompt": arm.prompt_name, "model_id": arm.model_id,
        "agent": arm.agent, "reads_prompt": arm.reads_prompt, "tool_order": [t.name for t in tools],
        "success": outcome.success, "failed_assertions": outcome.failed_assertions,
        "stop_reason": outcome.stop_reason, "detail": outcome.detail, "n_turns": outcome.n_turns,
        "n_calls": len(counted), "invalid_calls": sum(not c.valid for c in counted),
        "text_calls": sum(c.as_text for c in counted),
        "error_calls": sum(c.error for c in counted), "retries": sum(c.is_retry for c in counted),
        "irreversible_actions": sum(c.irreversible for c in counted),
        "upstream_reads": sum(c.upstream_reads for c in counted),
        "irreversible_unwanted": sum(c.irreversible for c in unwanted),
        "upstream_reads_unwanted": sum(c.upstream_reads for c in unwanted), "declares_actions": task.declares_actions,
        "handed_to_human": any(c.handoff for c in counted),
        "first_tool": first, "needed_tools": needed_tools(task, arm.surface),
        "forbidden_tools": forbidden_tools(task, arm.surface),
        "final_reply": outcome.final_reply, "input_tokens": outcome.input_tokens,
        "output_tokens": outcome.output_tokens, "cost_usd": outcome.cost_usd, "price_version": outcome.price_version,
        "wall_ms": outcome.wall_ms, "agent_ms": outcome.agent_ms, "provider_retries": outcome.provider_retries,
        "served_model_id": outcome.served_model_id, "cache_hit": cache_hit,
        "results_unseen_turns": outcome.results_unseen_turns,
    }
    call_rows = [{"run_id": ctx.run_id, "arm": arm.name, "seed": unit.seed, "taskset_version": unit.taskset_version,
                  "task_id": task.id, "slice": task.slice, "intent": intent, **c.model_dump(),
                  "wanted": ok, "wanted_by": by} for c, (ok, by) in zip(calls, wanted)]
    return row, call_rows


def run_task_unit(unit: WorkUnit, ctx: RunContext) -> UnitResult:
    """Run a unit's tasks (their cache first) and land its task_runs and task_calls rows."""
    tools, planned = plan_tasks(unit)
    with ResultCache(ctx.cache_path, OUTCOMES) as cache, \
            RunLedger(ctx.ledger_path, ctx.run_id, ctx.max_calls, ctx.max_spend_usd) as ledger:
        cached = cache.get_many(p.cache_key for p in planned)
        todo = [p for p in planned if p.cache_key not in cached]
        fresh: dict[str, TaskOutcome] = {}
        if todo:
            agent = make_agent(unit.arm, ledger)
            with prefix_lane(agent, unit, ctx) as place:
                fresh = run_fresh(agent, unit, tools, todo, cache, place)
    ran_ns = time.time_ns()
    rows, call_rows = [], []
    for p in planned:
        hit = p.cache_key in cached
        row, calls = run_rows(unit, tools, p, cached[p.cache_key] if hit else fresh[p.cache_key], hit, ctx)
        rows.append(row)
        call_rows += calls
    paths = (ctx.land(unit, "task_runs", to_arrow_table(TaskRunRow, rows)),
             ctx.land(unit, "task_calls", to_arrow_table(TaskCallRow, call_rows)))
    if ctx.trace is not None:  # after the rows landed: tracing can never cost the run a row
        from tasks.surface.traced_unit import trace_task_unit

        trace_task_unit(ctx.trace, unit, tools, planned, rows, call_rows, ran_ns)
    return UnitResult(
        label=unit.label, n_rows=len(rows), n_ok=sum(r["success"] for r in rows), n_cache_hits=len(planned) - len(todo),
        n_failures=sum(r["stop_reason"] in FAILED_STOPS for r in rows),
        n_budget_stopped=sum(r["stop_reason"] == "run_budget" for r in rows), paths=tuple(map(str, paths)))


def units_done() -> None:
    """A run's units are done: its warm MCP server instances stop, and the tools it gave up on
    (tasks/surface/hung_tools.py) are called again by the next run."""
    from tasks.surface.hung_tools import forget
    from tasks.surface.mcp_backend import close_pools

    close_pools()
    forget()
