"""Tasks done on a tool surface as a Python API; the ``tooleval tasks`` commands only parse and print.

    from flows.surface_api import run_task_experiment, task_report
    outcome = run_task_experiment("tasksets/support_tasks/experiments/four_arms.yaml", warehouse="/tmp/wh")
    outcome.report.verdict.status, outcome.exit_code

``run_task_experiment`` prepares the run once (arms, surfaces, tasks and their checks, criteria) before
Prefect is involved, so bad input fails fast and nothing is written; then the surface-run flow runs.
``task_report``, ``validate_tasks`` and ``write_catalogue`` never import Prefect.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from flows.exit_codes import EXIT_MODEL_MISMATCH, verdict_exit_code
from flows.prefect_server import run_server
from flows.prefect_settings import apply_prefect_defaults
from tasks.run.preflight import check_before_run
from tasks.surface.load_surface import load_surface
from tasks.surface.load_tasks import load_task_version
from tasks.surface.prepare_task_run import PreparedTaskRun, prepare_task_run_once
from tasks.surface.publish_task_report import read_task_report
from tasks.surface.task_checks import check_tasks
from tasks.surface.task_report import TaskReport
from warehouse.location import Warehouse, warehouse_at

if TYPE_CHECKING:
    from flows.surface_run import SurfaceRunSummary


@dataclass(frozen=True)
class _Planned:
    requests: tuple
    """A version's tasks under the name the selection preflight counts (one task run is one row of task_runs)."""


@dataclass(frozen=True)
class _PreflightView:
    """A prepared task run as the selection preflight reads it (experiment path, arms' versions, seeds)."""

    experiment: object
    versions: dict[str, _Planned]

    @classmethod
    def of(cls, prepared: PreparedTaskRun) -> "_PreflightView":
        return cls(prepared.experiment, {name: _Planned(v.tasks) for name, v in prepared.versions.items()})


@dataclass(frozen=True)
class TaskRunOutcome:
    summary: "SurfaceRunSummary"
    report: TaskReport
    warehouse: Warehouse

    @property
    def exit_code(self) -> int:
        if self.summary.halts:
            return EXIT_MODEL_MISMATCH
        return verdict_exit_code(self.report.verdict)


def run_task_experiment(experiment_path: Path | str, *, warehouse: str | Path | None = None, use_cache: bool = True,
                        max_calls: int | None = None, max_spend_usd: float | None = None,
                        trace: str | None = None) -> TaskRunOutcome:
    """Check, run, land, register and report one task experiment. Raises InputError on bad input, before any
    agent turn and with nothing written. ``trace`` (otlp://HOST:PORT, or 'off') as for ``run_experiment``."""
    apply_prefect_defaults()
    server = run_server()
    try:
        prepared = prepare_task_run_once(experiment_path)  # fail fast on bad input, while the server starts
        # the selection run's preflight: work planned, warehouse folder and DuckDB file, disk, PREFECT_HOME
        check_before_run(_PreflightView.of(prepared), warehouse_at(warehouse), starts_prefect_server=server is not None)
        from tasks.tracing.trace_target import resolve_trace_target

        resolve_trace_target(trace, prepared.experiment)  # a malformed trace target is bad input too
        from flows.api import prefect_api  # the selection API's server hand-over, reused
        from flows.surface_run import surface_run  # Prefect: heavy, imported only to run

        with prefect_api(server):
            summary = surface_run(experiment_path=str(experiment_path),
                                  warehouse_dir=str(warehouse) if warehouse is not None else None,
                                  use_cache=use_cache, max_calls=max_calls, max_spend_usd=max_spend_usd,
                                  trace=trace)
    finally:
        if server is not None:
            server.stop()
    location = warehouse_at(summary.warehouse)
    report = summary.report or read_task_report(location, summary.run_id)
    return TaskRunOutcome(summary=summary, report=report, warehouse=location)


def task_report(run_id: str | None = None, warehouse: str | Path | None = None) -> TaskReport:
    """A registered task run's report (default: the latest)."""
    return read_task_report(warehouse_at(warehouse), run_id)


def validate_tasks(tasks_path: str | Path, surfaces: list[str] | None = None) -> str:
    """The task checks on one version file (e.g. tasksets/support_tasks/t1.jsonl) against the named surfaces
    (default: every surface of the task set); a one-line summary, or InputError."""
    path = Path(tasks_path)
    folder, version = path.parent, path.name.removesuffix(".jsonl")
    names = surfaces or sorted(p.stem for p in (folder / "surfaces").glob("*.yaml"))
    loaded = load_task_version(folder, version)
    report = check_tasks(loaded, [load_surface(folder, name) for name in names])
    return (f"OK {path}: {report.n_tasks} tasks, slices {loaded.manifest.counts_by_slice}, checked against "
            f"{report.n_surfaces} surface(s) ({', '.join(names)}); hash {loaded.actual_hash[:12]} matches the manifest")


def write_catalogue(surface_path: str | Path, out: str | Path) -> str:
    """A surface's tools as offered (after its transform) written as a selection catalogue file, so the same
    transform can be a rung of a selection experiment."""
    path = Path(surface_path)
    surface = load_surface(path.parent.parent, path.stem)
    target = Path(out)
    name = target.stem
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"name": name, "description": surface.description,
                                  "tools": [t.spec.model_dump() for t in surface.tools]}, indent=2) + "\n")
    return f"wrote {target}: {len(surface.tools)} tools of surface {surface.name} as catalogue '{name}'"
