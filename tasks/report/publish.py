"""Read a run's figures from the warehouse, judge them against the registered criteria, and write the
markdown and HTML reports beside the data.

The verdict a run gets when it finishes is kept in ``registrations/<run_id>/verdict.json``: a later
``tooleval report`` shows that record rather than judging again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from schemas.arrow import arrow_schema, create_table_sql, duckdb_type
from schemas.criteria import Verdict
from tasks.experiment.criteria import changed_since_registration, read_registration, registered_criteria
from tasks.files.atomic_write import write_atomic
from tasks.files.input_errors import InputError
from tasks.report.figures import RunFigures, load_figures
from tasks.report.gates import judge, no_criteria, not_judged
from tasks.report.render import write_report_files
from tasks.run.drill_points import reached
from tasks.report.tables import Report, build_report_from, latest_run_id
from warehouse.connect import WarehouseUnreadable, connect
from warehouse.location import Warehouse
from warehouse.tables import TABLES
from warehouse.views import create_macros, view_files

VERDICT_FILE = "verdict.json"


REPORT_MEMORY_LIMIT = "128MB"
"""DuckDB's memory limit while a report's figures are read. At its default (80% of the machine's memory) the
views' hash aggregates over a 1M-row run held ~0.3 GB more of the process (which is at its largest right
after registering); bounded, the same figures come out (aggregates spill to the warehouse's temp directory
if they must)."""


def require_warehouse(db_path: Path, first: str = "tooleval run EXPERIMENT_FILE") -> None:
    """A warehouse file that is not there is bad input (naming the file and what makes one: ``first``)."""
    if not Path(db_path).is_file():
        raise InputError.one(str(db_path), "", "warehouse-exists",
                             f"no warehouse here: run `{first}` first, or give --warehouse DIR")


def open_read_only(db_path: Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection with the current view definitions as temporary views, so a warehouse
    written by an older tooleval still answers every view of this one (nothing is written to the file)."""
    con = connect(db_path, read_only=True)  # waits (bounded) while a run's registration holds the file
    shadow_older_tables(con)
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


def shadow_older_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Make a file written by an older tooleval look like this one's, without writing to it: a table it
    lacks becomes an empty temporary table, a table lacking newer columns a temporary view that adds them
    as NULL (temporary objects come first in DuckDB's name resolution)."""
    catalog = con.execute("SELECT current_database()").fetchall()[0][0]
    present: dict[str, set[str]] = {}
    for table, column in con.execute("SELECT table_name, column_name FROM information_schema.columns "
                                     "WHERE table_schema = 'main' AND table_catalog = current_database()").fetchall():
        present.setdefault(table, set()).add(column)
    for table, model in TABLES.items():
        fields = list(arrow_schema(model))
        if table not in present:
            con.execute(create_table_sql(model, table).replace("CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE"))
        elif missing := [f for f in fields if f.name not in present[table]]:
            added = ", ".join(f"CAST(NULL AS {duckdb_type(f.type)}) AS {f.name}" for f in missing)
            con.execute(f'CREATE TEMP VIEW {table} AS SELECT *, {added} FROM "{catalog}".main.{table}')


def read_figures(warehouse: Warehouse, run_id: str | None = None) -> RunFigures:
    """A registered run's figures (default: the latest run). An absent warehouse or an unknown run id is
    bad input (InputError naming the file and the run), never a KeyError."""
    require_warehouse(warehouse.db_path)
    try:
        con = open_read_only(warehouse.db_path)
    except WarehouseUnreadable as error:
        raise InputError.one(str(warehouse.db_path), "", "warehouse-readable",
                             f"not a DuckDB file this tooleval can read ({error}); move it away and rerun the "
                             "experiment, or give --warehouse DIR") from None
    try:
        con.execute(f"SET memory_limit = '{REPORT_MEMORY_LIMIT}'")
        if run_id is None:
            run_id = latest_run_id(con)
            if run_id is None:
                raise InputError.one(str(warehouse.db_path), "", "run-registered", "no run is registered yet")
        elif not con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]).fetchall()[0][0]:
            recent = [r for (r,) in con.execute(
                "SELECT run_id FROM runs ORDER BY finished_at DESC LIMIT 3").fetchall()]
            raise InputError.one(str(warehouse.db_path), f"run {run_id}", "run-registered",
                                 "no such run in this warehouse" + (f"; the latest: {', '.join(recent)}" if recent else ""))
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
    if not figures.run.get("n_rows"):
        return not_judged(run_id, "the run registered no rows: there is nothing to judge (an empty task-set "
                                  "version, or no seeds)", registration)
    verdict = judge(figures, criteria, registration)
    if verdict.status == "PASS" and not any(g.status == "PASS" for g in verdict.gates):
        return verdict.model_copy(update={
            "status": "NOT JUDGED",
            "reason": f"none of the {len(verdict.gates)} gates applied to this run (every one skipped): a run "
                      "that no gate could judge does not pass"})
    return verdict


def save_verdict(warehouse: Warehouse, verdict: Verdict) -> Path | None:
    if verdict.status == "NO CRITERIA":
        return None
    return write_atomic(warehouse.registrations_dir / verdict.run_id / VERDICT_FILE, verdict.model_dump_json(indent=2))


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
    reached("report-verdict-saved", run_id)
    report = build_report_from(figures, verdict)
    return PublishedReport(report, write_report_files(report, warehouse.reports_dir / run_id))


def publish_report(warehouse: Warehouse, run_id: str) -> dict[str, Path]:
    """Write reports/<run_id>/report.md and report.html; returns their paths."""
    return judge_and_publish(warehouse, run_id).paths
