"""Select and land one selection work unit: cached selections, fresh ones for the rest, scored rows to
Parquet (the table ``landed_rows``)."""

from __future__ import annotations

import time
from contextlib import contextmanager, nullcontext
from functools import lru_cache
from typing import TYPE_CHECKING, Any, ContextManager, Iterator

from schemas.arrow import to_arrow_table
from schemas.selection.rows import HostedTurn, Selection, SelectionRow
from tasks.core_records import RunContext, UnitResult, WorkUnit
from tasks.drill_points import reached
from tasks.run.item_counter import item_finished
from tasks.run.result_cache import CacheSpec, ResultCache
from tasks.selection.plan_batch import PlannedRequest, plan_batch
from tasks.run.prefix_lanes import lane_for
from tasks.selection.row_scoring import score_row
from tasks.selectors.base import SelectionInput

if TYPE_CHECKING:
    from tasks.selectors.base import Selector
    from tasks.selectors.providers.judge import Unjudged

SELECTIONS = CacheSpec(table="selections", column="selection", model=Selection,
                       keep=lambda selection: selection.outcome_hint != "error")
"""The selection cache: a request's selection under one arm and tool order; errors are never kept."""


@lru_cache(maxsize=1)
def unjudged() -> CacheSpec[Unjudged]:
    """Judged arms: a selection whose chat call is done and whose judge has not answered yet, under the same
    key, in the same file. Kept until the judged selection is cached; a resumed run then asks only the judge.
    Built when a hosted arm's unit first needs it: an offline arm's units never import the judge."""
    from tasks.selectors.providers.judge import Unjudged

    return CacheSpec(table="unjudged_selections", column="stage", model=Unjudged,
                     keep=lambda stage: stage.selection.outcome_hint != "error")


def selector_for(kind: str, model_id: str, options: dict[str, Any]) -> Selector:
    """The arm's selector (tasks/selectors/registry.py), whose clients and routers are imported when a unit
    first has a request to select: reading this module (``tooleval validate`` does) imports none of them."""
    from tasks.selectors.registry import selector_for as registered

    return registered(kind, model_id, options)


def build_row(unit: WorkUnit, planned: PlannedRequest, selection: Selection, cache_hit: bool, ctx: RunContext) -> dict:
    arm = unit.arm
    scored = score_row(planned, selection)
    return {
        "run_id": ctx.run_id, "experiment": ctx.experiment, "arm": arm.name, "rung": arm.rung, "seed": unit.seed,
        "taskset": unit.taskset, "taskset_version": unit.taskset_version, "request_id": planned.request_id,
        "slice": planned.slice, "intent": planned.intent, "label_status": planned.label_status,
        "catalogue": arm.catalogue_name, "tool_set_id": planned.tool_set_id, "n_tools": len(planned.tools),
        "expected": planned.expected, "label": planned.label, "expected_position": planned.expected_position,
        "confidence": selection.confidence,
        "probabilities": list(selection.probabilities.items()) if selection.probabilities is not None else None,
        "input_tokens": selection.input_tokens, "output_tokens": selection.output_tokens,
        "cost_usd": selection.cost_usd, "latency_ms": selection.latency_ms, "model_id": arm.model_id,
        "served_model_id": selection.served_model_id, "selector": arm.selector, "prompt": arm.prompt_name,
        "cache_hit": cache_hit, "retries": selection.retries,
        "http_attempts": 0 if cache_hit and selection.http_attempts is not None else selection.http_attempts,
        "nearest_example_cos": selection.nearest_example_cos,
        **routing_columns(selection), **scored,
    }


ROUTING_COLUMNS = tuple(name for name in HostedTurn.model_fields if name != "http_attempts")
"""A hosted turn's fields, copied from the selection to its row as they are (``http_attempts`` is this run's:
0 on a cache hit)."""


def routing_columns(selection: Selection) -> dict:
    columns = {name: getattr(selection, name) for name in ROUTING_COLUMNS}
    if columns["router_probabilities"] is not None:
        columns["router_probabilities"] = list(columns["router_probabilities"].items())
    return columns


def _prefix_lane(selector: object, unit: WorkUnit, ctx: RunContext, batched: bool = False) -> ContextManager[None]:
    """The endpoint's prefix lane for a hosted arm's unit (tasks/run/prefix_lanes.py); nothing to hold for an
    offline selector, nor for a unit that may wait on a provider batch (its wait would hold the endpoint's
    other seeds back for as long)."""
    caller = getattr(selector, "caller", None)
    if caller is None or not ctx.prefix_lanes or batched:
        return nullcontext()
    return lane_for((caller.kind, caller.endpoint)).hold((unit.arm.rung, unit.seed))


def _keep(ctx: RunContext, key: str, answer: Selection, unit: WorkUnit, judged: bool) -> None:
    """One answer, as it completes: cached at once (its chat stage, if one was kept, dropped), and counted
    for the progress line. Called in the endpoint's thread that received it: connections of its own, as
    ``_keep_stage`` (SQLite connections stay in their thread)."""
    with ResultCache(ctx.cache_path, SELECTIONS) as cache:
        kept = cache.put_many([(key, answer)])
    if kept and judged:
        with ResultCache(ctx.cache_path, unjudged()) as stages:
            stages.discard_many([key])
    item_finished(unit.label)


def _keep_stage(ctx: RunContext, key: str, stage: Unjudged) -> None:
    """A judged arm's chat call, kept before its judge is asked. Called in the endpoint's worker thread: a
    connection of its own (SQLite connections stay in their thread; a few ms beside the judge's calls)."""
    with ResultCache(ctx.cache_path, unjudged()) as stages:
        stages.put(key, stage)


@contextmanager
def _chat_stages(selector: object, ctx: RunContext, keys: list[str]) -> Iterator[tuple[ResultCache | None, dict]]:
    """For a judged arm: the stage cache, and the chat calls earlier runs made for these keys (input index ->
    Unjudged); (None, {}) for an arm without a judge."""
    if getattr(selector, "judge", None) is None or ctx.cache_path is None:
        yield None, {}
        return
    with ResultCache(ctx.cache_path, unjudged()) as stages:
        found = stages.get_many(keys)
        yield stages, {i: found[key] for i, key in enumerate(keys) if key in found}


def _batch_send(unit: WorkUnit, ctx: RunContext, keys: list[str]) -> Any:
    """How a hosted arm's unit may send its requests as a provider batch (the arm's ``batch`` option, else the
    run's), or None: as calls."""
    if not unit.arm.selector_options.get("batch", ctx.batch):
        return None
    from tasks.selectors.providers.batch_selection import JOURNAL_FILE, BatchSend

    folder = ctx.cache_path.parent if ctx.cache_path is not None else (
        ctx.ledger_path.parent if ctx.ledger_path is not None else None)
    return BatchSend(journal_path=folder / JOURNAL_FILE if folder is not None else None,
                     run=ctx.experiment if ctx.cache_path is not None else ctx.run_id,
                     arm=unit.arm.name, seed=unit.seed, keys=keys, detach=ctx.batch_wait == "detach")


def _select_hosted(selector: Selector, inputs: list[SelectionInput], unit: WorkUnit, ctx: RunContext,
                   keys: list[str]) -> tuple[list[Selection], tuple[str, ...] | None]:
    """A hosted arm's answers, or the provider batches still running when the unit detached from them.
    Each call is reserved in the run's ledger and each answer handed over as it completes: cached at once,
    so a crash mid-batch repeats no completed call on resume."""
    from tasks.selectors.providers.batch_selection import BatchesPending
    from tasks.selectors.providers.call_budget import BatchScope, RunLedger, batch_scope

    send = _batch_send(unit, ctx, keys)
    with RunLedger(ctx.ledger_path, ctx.run_id, ctx.max_calls, ctx.max_spend_usd) as ledger, \
            _chat_stages(selector, ctx, keys) as (stages, earlier), \
            batch_scope(BatchScope(
                ledger, lambda i, answer: _keep(ctx, keys[i], answer, unit, stages is not None),
                on_chat_stage=(lambda i, stage: _keep_stage(ctx, keys[i], stage)) if stages is not None else None,
                chat_stages=earlier, batch=send)), \
            _prefix_lane(selector, unit, ctx, send is not None):
        try:
            return selector.select(inputs), None
        except BatchesPending as pending:
            return [], pending.batch_ids


def select_and_land(unit: WorkUnit, ctx: RunContext) -> UnitResult:
    """The plain function: tested with no Prefect engine. The batch is planned here, where it runs
    (``plan_batch``): its per-request objects live as long as this call."""
    planned = plan_batch(unit)
    with ResultCache(ctx.cache_path, SELECTIONS) as cache:
        cached = cache.get_many(p.cache_key for p in planned)
        misses = [p for p in planned if p.cache_key not in cached]
        fresh: dict[str, Selection] = {}
        if misses:
            selector = selector_for(unit.arm.selector, unit.arm.model_id, unit.arm.selector_options)
            inputs = [SelectionInput(request_id=p.request_id, messages=p.messages, tools=p.tools,
                                     prompt=unit.arm.prompt_text)
                      for p in misses]
            reached("unit-selecting", unit.label)
            if getattr(selector, "caller", None) is None:  # offline: no calls to budget, batch or keep apart
                answers = selector.select(inputs)
            else:
                answers, pending = _select_hosted(selector, inputs, unit, ctx, [p.cache_key for p in misses])
                if pending is not None:  # detached: the rerun lands this unit
                    return UnitResult(label=unit.label, n_rows=0, n_ok=0, n_cache_hits=0, n_failures=0,
                                      pending_batches=pending)
            reached("unit-selected", unit.label)
            fresh = {p.cache_key: answer for p, answer in zip(misses, answers)}
            cache.put_many(fresh.items())
    selected_ns = time.time_ns()  # the traces end when the answers were in hand
    selections = [cached[p.cache_key] if p.cache_key in cached else fresh[p.cache_key] for p in planned]
    rows = [build_row(unit, p, selection, p.cache_key in cached, ctx) for p, selection in zip(planned, selections)]
    path = ctx.land(unit, "landed_rows", to_arrow_table(SelectionRow, rows))
    if ctx.trace is not None:  # after the rows landed: tracing can never cost the run a row
        from tasks.selection.traced_unit import trace_selection_unit

        trace_selection_unit(ctx.trace, unit, planned, selections, rows, selected_ns)
    return UnitResult(
        label=unit.label, n_rows=len(rows), n_ok=sum(r["correct"] for r in rows),
        n_cache_hits=len(planned) - len(misses), n_failures=sum(r["invalid"] or r["error"] or r["empty"] for r in rows),
        n_budget_stopped=_budget_stopped(rows), paths=(str(path),),
    )


def _budget_stopped(rows: list[dict]) -> int:
    """Rows the run's call budget stopped (error rows only: offline arms' units never import the ledger)."""
    errors = [r for r in rows if r["error"]]
    if not errors:
        return 0
    from tasks.selectors.providers.call_budget import BUDGET_REACHED

    return sum(r["detail"] == BUDGET_REACHED for r in errors)
