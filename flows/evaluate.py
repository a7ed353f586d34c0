"""The evaluate flow, for every instrument: extract -> check -> plan -> run and land -> register -> report.

Its Prefect tasks are thin wrappers over plain functions in tasks/ and warehouse/. Retries are for what
a retry can mend: file and warehouse I/O (a full disk freed, a DuckDB file another process held for a
moment, a network filesystem's hiccup). A deterministic failure (a bug, bad data) is not retried: it would
fail the same way. Network retries of model calls live in the provider layer
(tasks/selectors/providers/retry_policy.py), where each is counted on its row.
"""

from __future__ import annotations

import gc
import shutil
import sqlite3
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from typing import Any, Callable, Iterator

import duckdb
from prefect import Flow, get_run_logger, task, unmapped
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from flows.crash import stops_the_run
from flows.progress import UnitProgress, done_for_good
from flows.stop_on_signal import retake, watch_progress
from schemas.criteria import Verdict
from tasks.drill_points import reached
from tasks.experiment.criteria import register_criteria
from tasks.instrument_registry import landed_folders
from tasks.report.publish import judge_and_publish
from tasks.report_types import Report
from tasks.run.item_counter import in_flight
from tasks.run.leftovers import Leftovers, mark_owner, tidy_after_run
from tasks.run.prepare_run import CheckedRun, prepare_run
from tasks.run.registration_records import new_run_id, registration_records
from tasks.run.unpinned_cache import cache_use, start_warnings
from tasks.run.work_units import LEDGER_FILE, RunContext, UnitResult, WorkUnit, plan_units, run_unit
from tasks.tracing.trace_target import TraceTarget, resolve_trace_target
from warehouse.arrow_without_pandas import skip_pandas_probe
from warehouse.connect import WarehouseBusy
from warehouse.location import Warehouse, warehouse_at
from warehouse.register_run import RunRegistration, register_run, save_registration

MAX_WORKERS = 4

IO_ERRORS = (OSError, duckdb.IOException)
"""Failures a retry can mend: file-system and DuckDB file I/O (a lock held elsewhere included), and a
SQLite file (a result cache, the budget ledger) locked by another process for longer than its timeout."""


def is_io_failure(error: BaseException) -> bool:
    """An I/O failure a retry may mend: not a full disk or a refused write (``stops_the_run``)."""
    return (isinstance(error, IO_ERRORS) or (isinstance(error, sqlite3.OperationalError)
                                             and "locked" in str(error).lower())) and not stops_the_run(error)


def retry_on_io(task: Any, task_run: Any, state: Any) -> bool:
    """Prefect's retry condition: retry only when the task failed on I/O."""
    try:
        state.result()
    except BaseException as error:  # noqa: BLE001 - anything but I/O is deterministic here: not retried
        return is_io_failure(error)
    return False


UNIT_RETRY_DELAYS_S = (2.0, 10.0)
"""A unit that failed on I/O runs again after each of these delays (``run_unit_task``'s retries, and
``run_unit_retrying``'s for the units pulled by a task run)."""


@task(name="run-unit", retries=len(UNIT_RETRY_DELAYS_S), retry_delay_seconds=list(UNIT_RETRY_DELAYS_S),
      retry_condition_fn=retry_on_io, task_run_name="{unit.label}", cache_policy=NO_CACHE, log_prints=False)
def run_unit_task(unit: WorkUnit, ctx: RunContext) -> UnitResult:
    """Run one work unit (its instrument's per-item cache inside) and land its rows as Parquet."""
    return run_unit(unit, ctx)


class UnitQueue:
    """The run's work units, handed out one at a time in plan order to the task runs of this process that
    pull them (a plain class: a leaf to Prefect's walk of a task's parameters)."""

    __slots__ = ("units", "_next", "_lock")

    def __init__(self, units: list[WorkUnit]) -> None:
        self.units, self._next, self._lock = units, 0, threading.Lock()

    def stop(self) -> None:
        """No unit is handed out any more (a full disk: the run stops at its first failed write)."""
        with self._lock:
            self._next = len(self.units)

    def take(self) -> tuple[int, WorkUnit] | None:
        with self._lock:
            if self._next >= len(self.units):
                return None
            self._next += 1
            return self._next - 1, self.units[self._next - 1]


def run_unit_retrying(unit: WorkUnit, ctx: RunContext, sleep: Callable[[float], None] = time.sleep) -> UnitResult:
    """``run_unit``, run again after each of ``UNIT_RETRY_DELAYS_S`` while it fails on I/O."""
    for delay in UNIT_RETRY_DELAYS_S:
        try:
            return run_unit(unit, ctx)
        except Exception as error:  # noqa: BLE001 - anything but I/O is deterministic here: raised at once
            if not is_io_failure(error):
                raise
        sleep(delay)
    return run_unit(unit, ctx)


@task(name="run-units", task_run_name="units-{worker}", cache_policy=NO_CACHE, log_prints=False)
def run_units_task(worker: int, queue: UnitQueue, ctx: RunContext,
                   progress: UnitProgress) -> list[tuple[int, UnitResult | Exception]]:
    """Run the queue's units one after another until none is left, each counted in the progress as it
    lands; a unit's failure is kept with its place in the plan, not raised, so the other units still run.

    With the thread runner the flow runs ``MAX_WORKERS`` of these instead of a task run per unit: Prefect's
    bookkeeping (its engine, the state events its server records) is paid per task run, not per unit, while
    a unit stays the size its memory allows and the units still start in plan order (prefix lanes)."""
    done: list[tuple[int, UnitResult | Exception]] = []
    while (taken := queue.take()) is not None:
        index, unit = taken
        try:
            result = run_unit_retrying(unit, ctx)
        except Exception as error:  # noqa: BLE001 - raised by the flow once every unit has finished
            done.append((index, error))
            if stops_the_run(error):
                queue.stop()
            continue
        progress.update(result.n_rows, result.n_cache_hits)
        done.append((index, result))
    return done


@task(name="register-run", retries=3, retry_delay_seconds=[1, 5, 15], retry_condition_fn=retry_on_io,
      cache_policy=NO_CACHE, log_prints=False)
def register_run_task(warehouse_dir: str, registration: RunRegistration) -> int | WarehouseBusy:
    """Load the landed Parquet and the run's records into the DuckDB file in one transaction; the number
    of rows, or WarehouseBusy (returned, not raised: a held file is an outcome of the run, not a crash)
    when another process held the file past the bounded wait."""
    try:
        return register_run(warehouse_dir, registration)
    except WarehouseBusy as busy:
        return busy


@dataclass(frozen=True)
class RunSummary:
    run_id: str
    instrument: str
    """Its instrument's name (tasks/instrument_registry.py)."""
    n_rows: int
    """Items landed: selection rows, task runs."""
    n_units: int
    n_cache_hits: int
    n_failures: int
    warehouse: str
    reports: dict[str, str]
    n_ok: int = 0
    """Of the items, the good ones: correct selections, successful task runs."""
    n_calls: int = 0
    """HTTP requests sent to hosted models (routers, judges and retries included)."""
    spend_usd: float = 0.0
    """Their cost from the price file (a reply without token counts at its estimate)."""
    unknown_cost_calls: int = 0
    """Replies that reported no token counts: their rows' cost_usd is NULL."""
    n_budget_stopped: int = 0
    """Items not run because a cap was reached: rerun to resume."""
    max_calls: int | None = None
    max_spend_usd: float | None = None
    halts: dict[str, str] | None = None
    """Models no longer called because the served model differed from the pin: model -> reason."""
    verdict: Verdict | None = None
    """The run judged against the acceptance criteria it registered before its first model call."""
    report: Report | None = None
    """The published report (the same tables as the markdown and HTML files), so a caller need not read
    the figures from the warehouse a second time."""
    registered: bool = True
    """False when the DuckDB file stayed held by another process: the rows are landed and the run's records
    saved; ``tooleval register RUN_ID`` (or the next run) registers, judges and reports it."""
    late_registrations: list[str] | None = None
    """Earlier runs that had landed without registering and that this run registered."""
    leftovers: list[str] | None = None
    """What this run cleaned or finished of crashed runs (tasks/run/leftovers.py), one line each."""
    trace_target: TraceTarget | None = None
    """Where the run's traces went (None: not traced)."""
    unpinned_cache: list[str] | None = None
    """One warning per arm whose model is not pinned and some of whose results came from the cache
    (tasks/run/unpinned_cache.py): they may predate a change of the server's model."""
    batches_pending: int = 0
    """``batch_wait: detach``: batches still running at the provider; the run stopped before registering."""

    @property
    def trace(self) -> str | None:
        return str(self.trace_target) if self.trace_target else None

    @property
    def trace_warnings(self) -> list[str]:
        """Waits until this process has sent the run's spans and annotations, and says which were dropped
        (the collector was down, one line each; rows are unaffected). The flow itself does not wait."""
        return self.wait_for_traces(None)

    def wait_for_traces(self, announce: Callable[[str], None] | None) -> list[str]:
        """``trace_warnings``, telling ``announce`` once when sending takes more than a second."""
        if self.trace_target is None:
            return []
        from tasks.tracing.trace_sender import finished_warnings

        return finished_warnings(self.trace_target, announce)


YOUNG_GENERATION_THRESHOLD = 50_000
"""Allocations between the collector's youngest-generation passes while units run (Python's default: 700)."""


@contextmanager
def _few_collections() -> Iterator[None]:
    """Python's cyclic garbage collector, tuned while the units run, then put back: what is loaded by now
    (imports, the prepared run, the units) is frozen out of every walk, and the young generation is large
    enough that a batch's tracked objects (tens a row) mostly die before a pass instead of reaching the
    oldest generation and triggering full collections."""
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(YOUNG_GENERATION_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


class PlainParametersFlow(Flow):
    """A flow whose runs record their parameters as Prefect records them: strings, numbers, booleans and None
    as they are, the prepared run as '<CheckedRun>' (``evaluate``'s ``prepared``), anything else through
    Prefect's own encoder (FastAPI's, imported only then)."""

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        others = {key: value for key, value in parameters.items()
                  if type(value) not in (str, int, float, bool, type(None), CheckedRun)}
        encoded = super().serialize_parameters(others) if others else {}
        recorded: dict[str, Any] = {}
        for key, value in parameters.items():
            if key in encoded:
                recorded[key] = encoded[key]
            elif type(value) is CheckedRun:
                recorded[key] = "<CheckedRun>"
            elif key not in others:
                recorded[key] = value
        return recorded


@partial(PlainParametersFlow, name="evaluate", task_runner=ThreadPoolTaskRunner(max_workers=MAX_WORKERS),
         log_prints=False)
def evaluate(experiment_path: str, warehouse_dir: str | None = None, run_id: str | None = None,
             use_cache: bool = True, max_calls: int | None = None, max_spend_usd: float | None = None,
             allow_provisional: bool = False, trace: str | None = None, prepared: CheckedRun | None = None,
             batch: bool = False, batch_wait: str | None = None) -> RunSummary:
    """Run every arm x seed of an experiment (of either instrument) and register its rows in the warehouse.

    ``max_calls`` / ``max_spend_usd`` cap the run's hosted-model calls (default: the experiment's budget).
    ``allow_provisional`` lets a version with provisional labels (production hints) be measured; the report
    then says so. ``trace`` (otlp://HOST:PORT) sends the run's OpenInference traces, overriding the
    experiment's ``tracing:`` block. ``prepared``: the experiment at ``experiment_path``, prepared and checked
    by the caller (the CLI, before Prefect started); without it the flow prepares its own. The task runner is
    set with ``evaluate.with_options(task_runner=...)``, see ``flows/task_runners.py``. ``batch``: hosted arms'
    chat requests go through the providers' batch APIs (also when the experiment says ``batch: true``).
    ``batch_wait``: 'hold' (units wait for their batches) or 'detach' (default: the experiment's): units submit
    and poll once, and if a batch still runs the run stops before registering (``batches_pending``)."""
    retake()  # the tooleval command's prompt stop on SIGTERM, not Prefect's wait for the calls in flight
    started_at = datetime.now(timezone.utc)
    warehouse = warehouse_at(warehouse_dir)
    run_id = run_id or new_run_id(started_at)

    run = prepared.run if prepared is not None else prepare_run(experiment_path)
    kind = run.instrument
    if run.experiment.instrument_note:
        get_run_logger().warning("%s", run.experiment.instrument_note)
    kind.check_before_run(run, allow_provisional)  # provisional labels only when the run says so
    units = plan_units(run)
    forecast = prepared.forecast if prepared is not None else None  # what it will cost, registered with it
    if forecast is None:
        forecast = kind.forecast(run, warehouse.root, use_cache=use_cache)
        for line in forecast.lines():
            get_run_logger().info("run %s: %s", run_id, line)
    budget = run.experiment.spec.budget
    trace_target = resolve_trace_target(trace, run.experiment)
    cache_path = warehouse.root / "cache" / kind.store.cache_file
    ctx = RunContext(run_id=run_id, experiment=run.experiment.name, warehouse=warehouse.root,
                     cache_path=cache_path if use_cache else None, ledger_path=cache_path.parent / LEDGER_FILE,
                     max_calls=max_calls if max_calls is not None else (budget.max_calls if budget else None),
                     max_spend_usd=max_spend_usd if max_spend_usd is not None else (
                         budget.max_spend_usd if budget else None),
                     trace=trace_target, batch=batch or bool(getattr(run.experiment.spec, "batch", False)),
                     batch_wait=batch_wait or getattr(run.experiment.spec, "batch_wait", "hold"))

    mark_owner(warehouse, run_id)  # first: a concurrent run never takes this run's files for a crash's leftovers
    for line in start_warnings(run.experiment.arms, use_cache, cache_path.is_file(), kind.unpinned):
        get_run_logger().warning("run %s: %s", run_id, line)
    # acceptance criteria: hashed and timestamped before the first model call, judged after registration
    registered = (register_criteria(run.criteria[0], kind.criteria_file, warehouse.registrations_dir, run_id)
                  if run.criteria else None)

    skip_pandas_probe()  # before the units' threads convert rows: pyarrow then imports no pandas
    with _few_collections():
        progress = UnitProgress(len(units), sum(unit.n_items for unit in units), counted=kind.words.counted,
                                doing=kind.words.doing, log=get_run_logger().info, in_flight=in_flight).start()
        watch_progress(progress)  # what a signal's message says landed
        shares_memory = isinstance(FlowRunContext.get().task_runner, ThreadPoolTaskRunner)
        collect = (_pulled_units if shares_memory else _task_run_per_unit)(units, ctx, progress)
        progress.finish()
        kind.units_done()  # what the units kept warm in this process (MCP server instances) is released
        results: list[UnitResult] = collect()  # every unit has finished: the first failure (in plan order) raises

    pending = sorted({batch_id for result in results for batch_id in result.pending_batches})
    if pending:
        _start_finishing_tracing(trace_target)  # the units that landed traced theirs
        return _stopped_for_batches(warehouse, run_id, kind.name, units, results, len(pending), trace_target)
    reached("all-landed")
    cached = cache_use(run.experiment.arms, units, results, kind.unpinned)
    registration = registration_records(run, units, run_id, started_at, registered, trace_target, cached, forecast)
    save_registration(warehouse.registrations_dir, registration)  # registrable later if the file stays held
    reached("records-saved")
    logger = get_run_logger()
    n_rows = register_run_task(str(warehouse.root), registration)
    if isinstance(n_rows, WarehouseBusy):
        logger.warning("run %s: not registered yet: %s", run_id, n_rows)
        published, n_rows, late, leftovers = None, sum(r.n_rows for r in results), [], Leftovers()
    else:
        logger.info("run %s: %d rows registered in %s", run_id, n_rows, warehouse.db_path)
        done_for_good(f"run {run_id}: {n_rows:,} rows registered in {warehouse.db_path}")
        reached("registered")
        published = judge_and_publish(warehouse, run_id)  # refuses to judge if the criteria file changed
        done_for_good(f"run {run_id}: judged ({published.verdict.status if published.verdict else 'no criteria'}) "
                      f"and reported: `tooleval report {run_id}`")
        reached("published")
        late, leftovers = tidy_after_run(warehouse, run_id)  # earlier runs' waiting registrations, crash leftovers
        for line in leftovers.lines():
            logger.warning("run %s: %s", run_id, line)
        for done in late:
            logger.warning("run %s: registered earlier run %s (%d rows), which had landed without registering",
                           run_id, done.run_id, done.n_rows)
    spent = kind.spent(ctx.ledger_path, run_id)
    for model, reason in spent.halts.items():
        logger.warning("run %s: %s halted: %s", run_id, model, reason)
    if spent.refused:
        logger.warning("run %s: budget reached, %d requests not sent; rerun to resume from the cache", run_id,
                       spent.refused)
    unpinned = [use.warning(kind.words.items) for use in cached.values() if use.flagged]
    for line in unpinned:
        logger.warning("run %s: %s", run_id, line)
    _start_finishing_tracing(trace_target)
    return RunSummary(run_id=run_id, instrument=kind.name, n_rows=n_rows, n_units=len(units),
                      n_cache_hits=sum(r.n_cache_hits for r in results), n_ok=sum(r.n_ok for r in results),
                      n_failures=sum(r.n_failures for r in results), warehouse=str(warehouse.root),
                      reports={name: str(path) for name, path in published.paths.items()} if published else {},
                      n_calls=spent.calls, spend_usd=spent.spend_usd, unknown_cost_calls=spent.unknown_cost_calls,
                      n_budget_stopped=sum(r.n_budget_stopped for r in results),
                      max_calls=ctx.max_calls, max_spend_usd=ctx.max_spend_usd, halts=spent.halts,
                      verdict=published.verdict if published else None,
                      report=published.report if published else None,
                      registered=published is not None, late_registrations=[done.run_id for done in late],
                      leftovers=leftovers.lines(),
                      trace_target=trace_target, unpinned_cache=unpinned)


def _stopped_for_batches(warehouse: Warehouse, run_id: str, instrument: str, units: list[WorkUnit],
                         results: list[UnitResult], n_pending: int, trace_target: TraceTarget | None) -> RunSummary:
    """A detached run whose batches still run: the units' landed partitions are removed (their answers stay
    cached, the journal holds the batches), nothing is registered; the rerun lands and registers every row."""
    for folder in landed_folders().values():
        shutil.rmtree(warehouse.root / folder / f"run_id={run_id}", ignore_errors=True)
    shutil.rmtree(warehouse.registrations_dir / run_id, ignore_errors=True)  # its criteria: the rerun registers its own
    get_run_logger().warning("run %s: %s", run_id, batches_pending_line(n_pending))
    return RunSummary(run_id=run_id, instrument=instrument, n_rows=0, n_units=len(units),
                      n_cache_hits=sum(r.n_cache_hits for r in results), n_failures=0, warehouse=str(warehouse.root),
                      reports={}, registered=False, batches_pending=n_pending, trace_target=trace_target)


def batches_pending_line(n: int) -> str:
    """The one line a detached run stops with."""
    return f"{n} batch{'es' if n != 1 else ''} still running at the provider; rerun the same command to pick them up"


def _pulled_units(units: list[WorkUnit], ctx: RunContext,
                  progress: UnitProgress) -> Callable[[], list[UnitResult]]:
    """Threads of this process: ``MAX_WORKERS`` task runs pull the units in plan order until every one ran."""
    queue = UnitQueue(units)
    futures = run_units_task.map(list(range(min(MAX_WORKERS, len(units)))), queue=unmapped(queue),
                                 ctx=unmapped(ctx), progress=unmapped(progress))
    outcomes = sorted((pair for pulled in futures.result() for pair in pulled), key=lambda pair: pair[0])

    def collect() -> list[UnitResult]:
        for _, outcome in outcomes:
            if not isinstance(outcome, UnitResult):
                raise outcome
        return [outcome for _, outcome in outcomes]  # type: ignore[misc]
    return collect


def _task_run_per_unit(units: list[WorkUnit], ctx: RunContext,
                       progress: UnitProgress) -> Callable[[], list[UnitResult]]:
    """Other processes (Dask workers) share no queue: a task run per unit, counted as each finishes."""
    futures = run_unit_task.map(units, ctx=unmapped(ctx))
    for future in as_completed(list(futures)):  # progress as units finish, in any order
        done = future.result(raise_on_failure=False)
        if isinstance(done, UnitResult):  # a failed unit raises in collect, after every unit has finished
            progress.update(done.n_rows, done.n_cache_hits)
    return futures.result


def _start_finishing_tracing(target: TraceTarget | None) -> None:
    """The run is done: its trace process builds and sends the traces it holds (after the run's own work,
    so they never compete for the cores), while the flow returns; worker processes close theirs as they
    exit. ``RunSummary.trace_warnings`` waits for it."""
    if target is None:
        return
    from tasks.tracing.trace_sender import start_finishing

    start_finishing(target)
