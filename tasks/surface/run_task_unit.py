"""Run and land one work unit: outcomes from the task cache, fresh runs for the rest, two Parquet files.

Each fresh outcome is stored in the cache the moment its run ends (from the unit's own thread), so a
process killed mid-unit repeats, on resume, only the tasks that were still running. Hosted agents run
``concurrency`` tasks at once (the endpoint's gate bounds the calls in flight); the offline baseline runs
them one after another. Nothing an agent or a backend does raises out of here: a harness failure lands as
a row stopped on 'error' (never cached).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemas.arrow import to_arrow_table
from schemas.surface.rows import TaskCallRow, TaskOutcome, TaskRunRow
from tasks.selectors.call_budget import RunLedger
from tasks.selectors.chat_options import DEFAULT_CONCURRENCY
from tasks.surface.agent_loop import run_task
from tasks.surface.agent_types import Agent
from tasks.surface.baseline_agent import BaselineAgent
from tasks.surface.chat_agent import ChatAgent
from tasks.surface.plan_task_units import PlannedTask, TaskUnit
from tasks.surface.resolve_task_experiment import ResolvedTaskArm
from tasks.surface.task_cache import TaskCache
from warehouse.parquet_store import write_partition

if TYPE_CHECKING:  # tracing is imported only by a run that traces
    from tasks.tracing.trace_target import TraceTarget


@dataclass(frozen=True)
class TaskRunContext:
    run_id: str
    experiment: str
    runs_dir: Path
    calls_dir: Path
    cache_path: Path | None
    ledger_path: Path | None = None
    max_calls: int | None = None
    max_spend_usd: float | None = None
    trace: "TraceTarget | None" = None
    """Where the run's traces go (one per task run, a TOOL span per call); None: no tracing, no import."""


@dataclass(frozen=True)
class TaskUnitResult:
    label: str
    n_runs: int
    n_calls: int
    n_success: int
    n_cache_hits: int
    n_failed: int
    """Runs stopped on a provider error or the run's budget (rerun to resume)."""
    n_budget_stopped: int


def make_agent(arm: ResolvedTaskArm, ledger: RunLedger) -> Agent:
    if arm.agent == "baseline":
        return BaselineAgent(arm.model_id, arm.options)
    return ChatAgent(arm.agent, arm.model_id, arm.options, ledger)


def _guarded(agent: Agent, unit: TaskUnit, planned: PlannedTask) -> TaskOutcome:
    started = time.perf_counter()
    try:
        return run_task(agent, unit.arm.surface, planned.task, planned.fixtures, unit.tools,
                        unit.arm.prompt_text)
    except Exception as error:  # a harness bug must not sink the unit: it lands as a row, never cached
        return TaskOutcome(task_id=planned.task.id, success=False, stop_reason="error",
                           detail=f"harness failed: {type(error).__name__}: {error}"[:400], n_turns=0,
                           wall_ms=(time.perf_counter() - started) * 1000)


def run_fresh(agent: Agent, unit: TaskUnit, todo: list[PlannedTask], cache: TaskCache) -> dict[str, TaskOutcome]:
    """Run the tasks not in the cache; store each outcome as soon as it is done."""
    done: dict[str, TaskOutcome] = {}
    concurrency = 1 if unit.arm.agent == "baseline" else int(unit.arm.options.get("concurrency", DEFAULT_CONCURRENCY))
    if concurrency <= 1 or len(todo) <= 1:
        for planned in todo:
            done[planned.cache_key] = outcome = _guarded(agent, unit, planned)
            cache.put(planned.cache_key, outcome)
        return done
    with ThreadPoolExecutor(max_workers=min(concurrency, len(todo)), thread_name_prefix="task") as pool:
        futures = {pool.submit(_guarded, agent, unit, planned): planned for planned in todo}
        try:
            for future in as_completed(futures):
                planned = futures[future]
                done[planned.cache_key] = outcome = future.result()
                cache.put(planned.cache_key, outcome)
        finally:
            for future in futures:
                future.cancel()
    return done


def run_rows(unit: TaskUnit, planned: PlannedTask, outcome: TaskOutcome, cache_hit: bool,
             ctx: TaskRunContext) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    arm, task = unit.arm, planned.task
    calls = [c for c in outcome.calls]
    counted = [c for c in calls if not c.skipped_budget]
    first = counted[0].name if counted else None
    row = {
        "run_id": ctx.run_id, "experiment": ctx.experiment, "arm": arm.name, "rung": arm.rung, "seed": unit.seed,
        "taskset": unit.taskset, "taskset_version": unit.taskset_version, "task_id": task.id, "slice": task.slice,
        "intent": task.intent, "surface": arm.surface.name, "prompt": arm.prompt_name, "model_id": arm.model_id,
        "agent": arm.agent, "reads_prompt": arm.reads_prompt, "tool_order": [t.name for t in unit.tools],
        "success": outcome.success, "failed_assertions": outcome.failed_assertions,
        "stop_reason": outcome.stop_reason, "detail": outcome.detail, "n_turns": outcome.n_turns,
        "n_calls": len(counted), "invalid_calls": sum(not c.valid for c in counted),
        "error_calls": sum(c.error for c in counted), "retries": sum(c.is_retry for c in counted),
        "irreversible_actions": sum(c.irreversible for c in counted),
        "upstream_reads": sum(c.upstream_reads for c in counted), "handed_to_human": any(c.handoff for c in counted),
        "first_tool": first, "final_reply": outcome.final_reply, "input_tokens": outcome.input_tokens,
        "output_tokens": outcome.output_tokens, "cost_usd": outcome.cost_usd, "price_version": outcome.price_version,
        "wall_ms": outcome.wall_ms, "agent_ms": outcome.agent_ms, "provider_retries": outcome.provider_retries,
        "served_model_id": outcome.served_model_id, "cache_hit": cache_hit,
    }
    call_rows = [{"run_id": ctx.run_id, "arm": arm.name, "seed": unit.seed, "taskset_version": unit.taskset_version,
                  "task_id": task.id, "slice": task.slice, "intent": task.intent, **c.model_dump()} for c in calls]
    return row, call_rows


def run_task_unit(unit: TaskUnit, ctx: TaskRunContext) -> TaskUnitResult:
    """The plain function behind the Prefect task: tested with no Prefect engine."""
    with TaskCache(ctx.cache_path) as cache, \
            RunLedger(ctx.ledger_path, ctx.run_id, ctx.max_calls, ctx.max_spend_usd) as ledger:
        cached = cache.get_many(p.cache_key for p in unit.tasks)
        todo = [p for p in unit.tasks if p.cache_key not in cached]
        fresh = run_fresh(make_agent(unit.arm, ledger), unit, todo, cache) if todo else {}
    ran_ns = time.time_ns()
    rows, call_rows = [], []
    for planned in unit.tasks:
        hit = planned.cache_key in cached
        row, calls = run_rows(unit, planned, cached[planned.cache_key] if hit else fresh[planned.cache_key], hit, ctx)
        rows.append(row)
        call_rows += calls
    write_partition(ctx.runs_dir, ctx.run_id, unit.arm.name, unit.seed, unit.batch_index,
                    to_arrow_table(TaskRunRow, rows))
    write_partition(ctx.calls_dir, ctx.run_id, unit.arm.name, unit.seed, unit.batch_index,
                    to_arrow_table(TaskCallRow, call_rows))
    if ctx.trace is not None:  # after the rows landed: tracing can never cost the run a row
        from tasks.tracing.trace_unit import trace_task_unit

        trace_task_unit(ctx.trace, unit, rows, call_rows, ran_ns)
    return TaskUnitResult(
        label=unit.label, n_runs=len(rows), n_calls=len(call_rows), n_success=sum(r["success"] for r in rows),
        n_cache_hits=len(unit.tasks) - len(todo),
        n_failed=sum(r["stop_reason"] in ("error", "run_budget") for r in rows),
        n_budget_stopped=sum(r["stop_reason"] == "run_budget" for r in rows))
