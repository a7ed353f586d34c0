"""The surface-run flow: tasks done on a tool surface. extract -> check -> register criteria -> run
(arm x seed x batch of tasks) and land -> register -> report."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable

from prefect import flow, get_run_logger, unmapped
from prefect.task_runners import ThreadPoolTaskRunner

from flows.surface_run_tasks import register_task_run_task, run_task_unit_task
from schemas.criteria import Verdict
from tasks.run.registration_records import new_run_id
from tasks.tracing.trace_target import TraceTarget, resolve_trace_target
from tasks.selectors.call_budget import RunLedger, ledger_path
from tasks.surface.plan_task_units import plan_task_units
from tasks.surface.prepare_task_run import prepare_task_run_once
from tasks.surface.publish_task_report import publish_task_report
from tasks.surface.run_task_unit import TaskRunContext, TaskUnitResult
from tasks.surface.task_criteria import register_task_criteria
from tasks.surface.task_registration import task_registration
from tasks.surface.task_report import TaskReport
from warehouse.location import warehouse_at
from warehouse.task_paths import task_cache_path, task_calls_dir, task_runs_dir

MAX_WORKERS = 4


@dataclass(frozen=True)
class SurfaceRunSummary:
    run_id: str
    n_runs: int
    n_units: int
    n_cache_hits: int
    n_success: int
    n_failed: int
    """Runs stopped on a provider error or the run's budget: rerun the same command to resume."""
    n_budget_stopped: int
    warehouse: str
    reports: dict[str, str]
    n_calls: int = 0
    """Calls made to hosted models."""
    spend_usd: float = 0.0
    halts: dict[str, str] | None = None
    verdict: Verdict | None = None
    report: TaskReport | None = None
    trace_target: TraceTarget | None = None
    """Where the run's traces went (None: not traced); ``trace_warnings`` waits until they are sent."""

    @property
    def trace_warnings(self) -> list[str]:
        return self.wait_for_traces(None)

    def wait_for_traces(self, announce: Callable[[str], None] | None) -> list[str]:
        """``trace_warnings``, telling ``announce`` once when sending takes more than a second."""
        if self.trace_target is None:
            return []
        from tasks.tracing.trace_sender import finished_warnings

        return finished_warnings(self.trace_target, announce)


@flow(name="surface-run", task_runner=ThreadPoolTaskRunner(max_workers=MAX_WORKERS), log_prints=False)
def surface_run(experiment_path: str, warehouse_dir: str | None = None, run_id: str | None = None,
                use_cache: bool = True, max_calls: int | None = None,
                max_spend_usd: float | None = None, trace: str | None = None) -> SurfaceRunSummary:
    """Run every arm x seed x task of a task experiment and register task_runs and task_calls."""
    started_at = datetime.now(timezone.utc)
    warehouse = warehouse_at(warehouse_dir)
    run_id = run_id or new_run_id(started_at)

    prepared = prepare_task_run_once(experiment_path)  # the API's checked run when it prepared one here
    units = plan_task_units(prepared.experiment, prepared.versions)
    budget = prepared.experiment.spec.budget
    trace_target = resolve_trace_target(trace, prepared.experiment)  # --trace, else the tracing: block
    ctx = TaskRunContext(
        run_id=run_id, experiment=prepared.experiment.name, runs_dir=task_runs_dir(warehouse),
        calls_dir=task_calls_dir(warehouse), cache_path=task_cache_path(warehouse) if use_cache else None,
        ledger_path=ledger_path(task_cache_path(warehouse)),
        max_calls=max_calls if max_calls is not None else (budget.max_calls if budget else None),
        max_spend_usd=max_spend_usd if max_spend_usd is not None else (budget.max_spend_usd if budget else None),
        trace=trace_target)

    registered = (register_task_criteria(prepared.criteria[0], warehouse.registrations_dir, run_id)
                  if prepared.criteria else None)  # hashed and timestamped before the first call

    results: list[TaskUnitResult] = run_task_unit_task.map(units, ctx=unmapped(ctx)).result()

    registration = task_registration(prepared, run_id, started_at,
                                     criteria_hash=registered.sha256 if registered else None,
                                     criteria_registered_at=registered.registered_at if registered else None)
    n_runs = register_task_run_task(warehouse.db_path, ctx.runs_dir, ctx.calls_dir, registration)
    get_run_logger().info("task run %s: %d runs registered in %s", run_id, n_runs, warehouse.db_path)
    published = publish_task_report(warehouse, run_id)
    with RunLedger(ctx.ledger_path, run_id) as ledger:
        spent = ledger.summary()
    if trace_target is not None:  # the run is done: its trace process builds and sends what it holds
        from tasks.tracing.trace_sender import start_finishing

        start_finishing(trace_target)
    return SurfaceRunSummary(
        run_id=run_id, n_runs=n_runs, n_units=len(units), n_cache_hits=sum(r.n_cache_hits for r in results),
        n_success=sum(r.n_success for r in results), n_failed=sum(r.n_failed for r in results),
        n_budget_stopped=sum(r.n_budget_stopped for r in results), warehouse=str(warehouse.root),
        reports={kind: str(path) for kind, path in published.paths.items()}, n_calls=spent.calls,
        spend_usd=spent.spend_usd, halts=spent.halts, verdict=published.report.verdict, report=published.report,
        trace_target=trace_target)
