"""Read a task run's figures from the warehouse, judge them against the criteria registered before the
run's first call, and write the text and markdown reports beside the data. The verdict given when the run
finished is kept (``registrations/<run_id>/task_verdict.json``); a later report shows that record."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from schemas.criteria import Verdict
from tasks.experiment.criteria import changed_since_registration, read_registration
from tasks.files.input_errors import InputError
from tasks.report.publish import open_read_only, require_warehouse
from tasks.surface.task_criteria import registered_task_criteria
from tasks.surface.task_figures import TaskRunFigures, latest_task_run, load_task_figures
from tasks.surface.task_gates import judge_task_run
from tasks.surface.task_report import TaskReport, build_task_report, render_task_markdown, render_task_text
from warehouse.location import Warehouse

VERDICT_FILE = "task_verdict.json"


@dataclass(frozen=True)
class PublishedTaskReport:
    report: TaskReport
    figures: TaskRunFigures
    paths: dict[str, Path]


def read_task_figures(warehouse: Warehouse, run_id: str | None = None) -> TaskRunFigures:
    require_warehouse(warehouse.db_path, "tooleval tasks run EXPERIMENT_FILE")
    con = open_read_only(warehouse.db_path)
    try:
        run_id = run_id or latest_task_run(con)
        known = run_id is not None and con.execute(
            "SELECT count(*) FROM task_experiments WHERE run_id = ?", [run_id]).fetchall()[0][0]
        if not known:
            raise InputError.one(str(warehouse.db_path), f"run {run_id}", "run-exists",
                                 "no such task run in this warehouse")
        return load_task_figures(con, run_id)
    finally:
        con.close()


def task_verdict(warehouse: Warehouse, figures: TaskRunFigures) -> Verdict | None:
    """The run judged against its registered criteria; NOT JUDGED when they changed since; None without any."""
    registration = read_registration(warehouse.registrations_dir, figures.run_id)
    if registration is None:
        return None
    changed = changed_since_registration(registration)
    if changed:
        return Verdict(run_id=figures.run_id, status="NOT JUDGED", reason=changed, criteria_path=registration.source,
                       criteria_hash=registration.sha256, registered_at=registration.registered_at)
    return judge_task_run(figures, registered_task_criteria(registration), registration.source,
                          registration.sha256, registration.registered_at)


def publish_task_report(warehouse: Warehouse, run_id: str) -> PublishedTaskReport:
    """Judge now, keep the verdict, write the report files (called once, at the end of the run)."""
    figures = read_task_figures(warehouse, run_id)
    verdict = task_verdict(warehouse, figures)
    if verdict is not None:
        directory = warehouse.registrations_dir / run_id
        directory.mkdir(parents=True, exist_ok=True)
        (directory / VERDICT_FILE).write_text(verdict.model_dump_json(indent=2))
    report = build_task_report(figures, verdict)
    out = warehouse.reports_dir / run_id
    out.mkdir(parents=True, exist_ok=True)
    paths = {"text": out / "tasks_report.txt", "markdown": out / "tasks_report.md"}
    paths["text"].write_text(render_task_text(report))
    paths["markdown"].write_text(render_task_markdown(report))
    return PublishedTaskReport(report=report, figures=figures, paths=paths)


def read_task_report(warehouse: Warehouse, run_id: str | None = None) -> TaskReport:
    """A registered task run's report (default: the latest) with the verdict it was given when it ran."""
    figures = read_task_figures(warehouse, run_id)
    kept = warehouse.registrations_dir / figures.run_id / VERDICT_FILE
    verdict = Verdict.model_validate_json(kept.read_text()) if kept.is_file() else task_verdict(warehouse, figures)
    return build_task_report(figures, verdict)
