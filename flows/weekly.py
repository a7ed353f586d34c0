"""The weekly flow: resample -> label checks -> the production configuration on every version in use
(which calibrates the new version against its parent) -> the weekly report with drift and label age.

Run by the weekly deployment (deployments/prefect.yaml). ``allow_provisional`` (default on) lets the new
version, whose labels are production hints until its queue is imported, be measured and calibrated; the
reports say so. With it off, only adjudicated versions are measured. The flow run ends Failed when the
production run's exit code would be non-zero (flows/run_outcome.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.states import Completed

from flows.batch_follow_up import FOLLOW_UP_S, follow_up_message, schedule_follow_up
from flows.cancel_batches import cancel_run_batches, named
from flows.resample import QUIET, resample
from flows.run_outcome import artifact_key, final_state, publish_run
from flows.task_runners import evaluate_on
from schemas.traffic import ResampleSummary
from tasks.files.input_errors import InputError
from tasks.taskset.label_checks import CheckReport, check_labels
from tasks.taskset.load_taskset import load_catalogue, load_version, load_weights
from tasks.experiment.resolve_experiment import load_experiment_file
from tasks.traffic.resample_version import load_traffic_config
from tasks.traffic.version_age import label_age
from tasks.weekly.weekly_experiment import WeeklyExperiment, write_weekly_experiment
from tasks.weekly.weekly_report import build_weekly_report, write_weekly_report
from warehouse.location import warehouse_at

@dataclass(frozen=True)
class WeeklySummary:
    """What a weekly flow run stores as its result: the week's version, its run, reports and findings."""

    version: str
    parent: str | None
    window: str
    reused: bool
    versions: list[str]
    run_id: str | None
    reports: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    calibration: dict[str, float] = field(default_factory=dict)
    drift: dict[str, float] = field(default_factory=dict)


def production_catalogues(experiment: Path, arm: str | None) -> list[str]:
    """The catalogues of the experiment's production arm (every arm when ``arm`` is None)."""
    spec = load_experiment_file(experiment)
    defaults = spec.defaults.catalogue if spec.defaults else None
    return sorted({a.catalogue or defaults for a in spec.arms if arm is None or a.name == arm} - {None})


@task(name="label-checks", **QUIET)
def label_checks_task(taskset_dir: str, version: str, window: str, catalogues: list[str]) -> CheckReport:
    """Great Expectations label checks on the published version, the production catalogues and weights."""
    directory = Path(taskset_dir)
    weights_path = directory / "weights" / f"{window}.json"
    return check_labels(load_version(directory, version), [load_catalogue(directory, c) for c in catalogues],
                        load_weights(directory, window), weights_path)


@task(name="weekly-experiment", **QUIET)
def weekly_experiment_task(experiment: str, taskset_dir: str, out_dir: str, summary: ResampleSummary,
                           allow_provisional: bool, arm: str | None, versions_in_use: list[str] | None) -> WeeklyExperiment:
    return write_weekly_experiment(Path(experiment), Path(taskset_dir), Path(out_dir), summary.window.id,
                                   summary.version, summary.parent, allow_provisional, arm, versions_in_use)


@task(name="weekly-report", **QUIET)
def weekly_report_task(taskset_dir: str, experiment: str, summary: ResampleSummary, checks: CheckReport,
                       weekly_experiment: WeeklyExperiment, run_id: str | None, warehouse_dir: str, now: datetime,
                       max_label_age_days: int | None):
    directory = Path(taskset_dir)
    config = load_traffic_config(directory)
    warehouse = warehouse_at(warehouse_dir)
    spec = load_experiment_file(Path(experiment))
    previous = load_weights(directory, spec.weights) if spec.weights else None
    age = label_age(directory, now, max_label_age_days or (config.max_label_age_days if config else 28))
    report, calibration = build_weekly_report(
        taskset_dir=directory, summary=summary, checks=checks, weekly=weekly_experiment, run_id=run_id,
        warehouse=warehouse, label_age=age, now=now, max_log_lag_days=config.max_log_lag_days if config else 8,
        previous_weights=previous, current_weights=load_weights(directory, summary.window.id))
    paths = write_weekly_report(warehouse, report, calibration, summary.window.id, summary.version,
                                run_id or "not-run")
    return report, paths


PRODUCTION = "tasksets/support/experiments/production.yaml"
CANCEL_BATCHES = cancel_run_batches(lambda parameters: named(parameters.get("experiment") or PRODUCTION, "-weekly"))
"""Cancelling a flow run cancels the batches its week's run waits on (not a crash: a rerun picks those up)."""


@flow(name="weekly", log_prints=False, persist_result=True, on_cancellation=[CANCEL_BATCHES])
def weekly(taskset_dir: str = "tasksets/support", experiment: str = PRODUCTION,
           arm: str | None = None, traffic: str | None = None, window: str | None = None, weeks: int | None = None,
           size: int | None = None, seed: int | None = None, versions_in_use: list[str] | None = None,
           allow_provisional: bool = True, max_label_age_days: int | None = None, warehouse_dir: str | None = None,
           task_runner: str | None = None, use_cache: bool = True, now: datetime | None = None,
           follow_up_s: float = FOLLOW_UP_S):
    """Resample the production log into a new version and re-measure the production configuration. Ends Failed
    when the production run's gates fail (or it is not judged or registered), with the verdict line as the
    state's message; the weekly report, the calibration and the run's report and gates are artifacts. An
    experiment with ``batch_wait: detach`` whose batches still run: a follow-up flow run of the deployment
    (``follow_up_s`` later, flows/batch_follow_up.py) measures and reports the week instead."""
    logger = get_run_logger()
    now = now or datetime.now(timezone.utc)
    warehouse = warehouse_at(warehouse_dir)
    catalogues = production_catalogues(Path(experiment), arm)
    if not catalogues:
        raise InputError.one(experiment, f"arm {arm}", "arm-exists", "no production arm with a catalogue")

    summary = resample(taskset_dir=taskset_dir, traffic=traffic, window=window, weeks=weeks, size=size, seed=seed,
                       now=now)
    checks = label_checks_task(taskset_dir, summary.version, summary.window.id, catalogues)
    weekly_experiment = weekly_experiment_task(experiment, taskset_dir, str(warehouse.root / "experiments"), summary,
                                               allow_provisional, arm, versions_in_use)
    run = evaluate_on(task_runner)(experiment_path=str(weekly_experiment.path), warehouse_dir=str(warehouse.root),
                                   use_cache=use_cache, allow_provisional=allow_provisional)
    if run.batches_pending:  # detached: nothing registered; the follow-up picks the batches up and reports
        waiting = publish_run(run, f"weekly-{Path(taskset_dir).name}-run", "weekly run")
        line = f"weekly {summary.window.id} {summary.version}: {waiting.verdict_line}"
        if (follow_up := schedule_follow_up(follow_up_s)) is not None:
            return Completed(message=follow_up_message(line, follow_up), data=waiting)
        return final_state(waiting, line, waiting.exit_code)
    report, paths = weekly_report_task(taskset_dir, experiment, summary, checks, weekly_experiment, run.run_id,
                                       str(warehouse.root), now, max_label_age_days)
    for warning in report.warnings:
        logger.warning(warning)
    logger.info("weekly %s: %s, run %s, report %s", summary.window.id, summary.version, run.run_id, paths["weekly"])
    key = f"weekly-{Path(taskset_dir).name}"
    outcome = publish_run(run, key + "-run", "weekly run")
    create_markdown_artifact(report.markdown(), key=artifact_key(key, "report"),
                             description=f"weekly report {summary.window.id}, {summary.version}: {outcome.verdict_line}")
    if "calibration" in paths:
        create_markdown_artifact(Path(paths["calibration"]).read_text(), key=artifact_key(key, "calibration"),
                                 description=f"calibration of {summary.version} against {summary.parent}")
    weekly_summary = WeeklySummary(
        version=summary.version, parent=summary.parent, window=summary.window.id, reused=summary.reused,
        versions=weekly_experiment.versions, run_id=run.run_id,
        reports={**{k: str(v) for k, v in paths.items()}, **run.reports}, warnings=report.warnings,
        calibration=report.calibration, drift=report.drift)
    line = (f"weekly {summary.window.id} {summary.version}: {outcome.verdict_line}"
            + (f"; {len(report.warnings)} warning(s)" if report.warnings else ""))
    return final_state(weekly_summary, line, outcome.exit_code)
