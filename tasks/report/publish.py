"""Read a run's figures from the warehouse, judge them against the registered criteria, and write the
markdown and HTML reports beside the data.

The verdict a run gets when it finishes is kept in ``registrations/<run_id>/verdict.json``: a later
``tooleval report`` shows that record rather than judging again.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from schemas.criteria import Verdict
from tasks.experiment.criteria import changed_since_registration, read_registration, registered_criteria
from tasks.report.gates import judge, no_criteria, not_judged
from tasks.files.input_errors import InputError
from tasks.report.render import write_report_files
from tasks.report.figures import RunFigures, load_figures
from tasks.report.tables import Report, build_report_from, latest_run_id
from warehouse.location import Warehouse
from warehouse.views import create_macros, view_files

VERDICT_FILE = "verdict.json"


def open_read_only(db_path: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection with the current view definitions as temporary views, so a warehouse
    written by an older tooleval still answers every view of this one (nothing is written to the file)."""
    con = duckdb.connect(str(db_path), read_only=True)
    create_macros(con, temporary=True)
    files = view_files()
    texts = {name: path.read_text() for name, path in files.items()}
    done: set[str] = set()

    def create(name: str) -> None:
        if name in done:
            return
        done.add(name)
        for other in texts:
            if other != name and re.search(rf"\b{re.escape(other)}\b", texts[name]):
                create(other)
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS\n{texts[name]}")

    for name in sorted(texts):
        create(name)
    return con


def read_figures(warehouse: Warehouse, run_id: str | None = None) -> RunFigures:
    if not warehouse.db_path.is_file():
        raise FileNotFoundError(f"no warehouse at {warehouse.db_path}: run `tooleval run EXPERIMENT` first")
    con = open_read_only(warehouse.db_path)
    try:
        run_id = run_id or latest_run_id(con)
        if run_id is None:
            raise KeyError(f"no run registered in {warehouse.db_path}")
        return load_figures(con, run_id)
    finally:
        con.close()


def judge_registered(figures: RunFigures, warehouse: Warehouse, check_source: bool) -> Verdict:
    """Judge the run against the criteria it registered; refuse when they cannot be trusted.

    ``check_source``: also refuse when the criteria file itself changed since registration (the run's
    own judgement does this; a later report judges the registered copy).
    """
    run_id = figures.run_id
    registration = read_registration(warehouse.registrations_dir, run_id)
    recorded = figures.run.get("criteria_hash")
    if registration is None:
        if recorded:
            return not_judged(run_id, f"the run registered criteria sha256 {recorded[:12]} but their registration "
                                      f"files are missing from {warehouse.registrations_dir / run_id}")
        return no_criteria(run_id)
    if recorded and recorded != registration.sha256:
        return not_judged(run_id, "the registration files do not match the criteria hash in the run record",
                          registration)
    if check_source:
        reason = changed_since_registration(registration)
        if reason:
            return not_judged(run_id, reason, registration)
    try:
        criteria = registered_criteria(registration)
    except (ValueError, InputError, OSError) as error:
        return not_judged(run_id, f"the registered criteria cannot be read: {error}", registration)
    return judge(figures, criteria, registration)


def save_verdict(warehouse: Warehouse, verdict: Verdict) -> Path | None:
    if verdict.status == "NO CRITERIA":
        return None
    directory = warehouse.registrations_dir / verdict.run_id
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / VERDICT_FILE
    tmp = path.with_name(f".tmp-{path.name}-{os.getpid()}")
    tmp.write_text(verdict.model_dump_json(indent=2))
    os.replace(tmp, path)
    return path


def load_verdict(warehouse: Warehouse, run_id: str) -> Verdict | None:
    path = warehouse.registrations_dir / run_id / VERDICT_FILE
    if not path.is_file():
        return None
    return Verdict.model_validate_json(path.read_text())


def read_report(warehouse: Warehouse, run_id: str | None = None) -> Report:
    """The report of a run (default: the latest) with its recorded verdict (judged now if none was kept)."""
    figures = read_figures(warehouse, run_id)
    verdict = load_verdict(warehouse, figures.run_id) or judge_registered(figures, warehouse, check_source=False)
    return build_report_from(figures, verdict)


@dataclass(frozen=True)
class PublishedReport:
    report: Report
    paths: dict[str, Path]

    @property
    def verdict(self) -> Verdict:
        assert self.report.verdict is not None
        return self.report.verdict


def judge_and_publish(warehouse: Warehouse, run_id: str) -> PublishedReport:
    """What a run does once its rows are registered: judge the gates (refusing if the criteria file
    changed since registration), keep the verdict, write reports/<run_id>/report.md and report.html."""
    figures = read_figures(warehouse, run_id)
    verdict = judge_registered(figures, warehouse, check_source=True)
    save_verdict(warehouse, verdict)
    report = build_report_from(figures, verdict)
    return PublishedReport(report, write_report_files(report, warehouse.reports_dir / run_id))


def publish_report(warehouse: Warehouse, run_id: str) -> dict[str, Path]:
    """Write reports/<run_id>/report.md and report.html; returns their paths."""
    return judge_and_publish(warehouse, run_id).paths
