"""Read a run's figures from the warehouse, judge them against the registered criteria, and write the
markdown and HTML reports beside the data: the same for every instrument, each reading its own figures and
building its own tables (``Instrument.load_figures``, ``Instrument.build_report``).

The verdict a run gets when it finishes is kept in ``registrations/<run_id>/verdict.json``: a later
``tooleval report`` shows that record rather than judging again, and reads the run with the instrument's
report reader (tasks/instrument_registry.py ``report_reader``) alone; judging (the criteria files, the gate kinds)
and writing the report files import what they need when they run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import duckdb

from schemas.criteria import Verdict
from tasks.files.input_errors import InputError
from tasks.instrument_api import instrument
from tasks.instrument_registry import card, cards, report_reader, stores
from tasks.report.read_only import open_read_only, require_warehouse  # noqa: F401 (re-exported)
from tasks.report_types import Report
from warehouse.connect import WarehouseUnreadable
from warehouse.location import Warehouse

if TYPE_CHECKING:
    from tasks.instrument_api import Figures, Instrument

VERDICT_FILE = "verdict.json"


REPORT_MEMORY_LIMIT = "128MB"
"""DuckDB's memory limit while a report's figures are read. At its default (80% of the machine's memory) the
views' hash aggregates over a large run hold more of the process (which is at its largest right after
registering); bounded, the same figures come out (aggregates spill to the warehouse's temp directory
if they must)."""


def run_instrument(con: duckdb.DuckDBPyConnection, run_id: str) -> str | None:
    """The instrument that registered ``run_id`` in this warehouse (None: no such run)."""
    for name, store in stores().items():
        if con.execute(f"SELECT count(*) FROM {store.run_table} WHERE run_id = ?", [run_id]).fetchall()[0][0]:
            return name
    return None


def other_instrument(run_id: str, name: str, command: str) -> str:
    """Why ``command`` does not read ``run_id``, registered by instrument ``name``, and which command does."""
    other = card(name)
    return (f"run {run_id} is a {other.run_kind}, which `{command}` does not read: read it with "
            f"`{other.report_command} {run_id}`")


def latest_runs(con: duckdb.DuckDBPyConnection, instrument_name: str | None = None, limit: int = 1) -> list[str]:
    """The run ids registered last (of one instrument, or of any), latest first."""
    tables = [store.run_table for name, store in stores().items() if instrument_name in (None, name)]
    union = " UNION ALL ".join(f"SELECT run_id, finished_at FROM {table}" for table in tables)
    return [r for (r,) in con.execute(f"SELECT run_id FROM ({union}) ORDER BY finished_at DESC, run_id DESC "
                                      f"LIMIT {int(limit)}").fetchall()]


def read_figures(warehouse: Warehouse, run_id: str | None = None, instrument_name: str | None = None,
                 latest_out: dict[str, str | None] | None = None,
                 once_read: Callable[[], None] | None = None) -> tuple[str, Any]:
    """A registered run's instrument name (tasks/instrument_registry.py) and figures (default: the latest run, of
    ``instrument_name`` when given). An absent warehouse or an unknown run id is bad input (InputError naming
    the file and the run). ``latest_out``: filled with the latest run of any instrument ('None') and of each.
    ``once_read``: called when the figures are read, while the read-only connection still holds the file (no
    process can write it then: the file's state taken there is the state the figures were read from)."""
    require_warehouse(warehouse.db_path)
    try:
        con = open_read_only(warehouse.db_path)
    except WarehouseUnreadable as error:
        raise InputError.one(str(warehouse.db_path), "", "warehouse-readable",
                             f"not a DuckDB file this tooleval can read ({error}); move it away and rerun the "
                             "experiment, or give --warehouse DIR") from None
    what = card(instrument_name).run_kind if instrument_name else "run"
    try:
        con.execute(f"SET memory_limit = '{REPORT_MEMORY_LIMIT}'")
        if run_id is None:
            latest = latest_runs(con, instrument_name)
            if not latest:
                raise InputError.one(str(warehouse.db_path), "", "run-registered", f"no {what} is registered yet")
            run_id = latest[0]
        name = run_instrument(con, run_id)
        if name is not None and instrument_name not in (None, name):
            raise InputError.one(str(warehouse.db_path), f"run {run_id}", "run-instrument",
                                 other_instrument(run_id, name, card(instrument_name).report_command))
        if name is None:
            recent = latest_runs(con, instrument_name, limit=3)
            raise InputError.one(str(warehouse.db_path), f"run {run_id}", "run-registered",
                                 f"no such {what} in this warehouse" + (f"; the latest: {', '.join(recent)}"
                                                                        if recent else ""))
        if latest_out is not None:
            latest_out.update({str(kind): next(iter(latest_runs(con, kind)), None) for kind in (None, *cards())})
        figures = report_reader(name).load_figures(con, run_id)
        if once_read is not None:
            once_read()
        return name, figures
    finally:
        con.close()


def judge_registered(kind: Instrument, figures: Figures, warehouse: Warehouse, check_source: bool) -> Verdict:
    """Judge the run against the criteria it registered; refuse when they cannot be trusted.

    ``kind``: the run's ``Instrument``. ``check_source``: also refuse when the criteria file itself changed
    since registration (the run's own judgement does this; a later report judges the registered copy).
    """
    from tasks.experiment.criteria import criteria_to_judge, read_registration
    from tasks.report.judge import judge, no_criteria, not_judged

    run_id = figures.run_id
    registration = read_registration(warehouse.registrations_dir, run_id)
    recorded = figures.run.get("criteria_hash")
    if registration is None:
        if recorded:
            return not_judged(run_id, f"the run registered criteria sha256 {recorded[:12]} but their registration "
                                      f"files are missing from {warehouse.registrations_dir / run_id}")
        return no_criteria(run_id)
    criteria, refused = criteria_to_judge(registration, recorded, check_source, kind.criteria_file)
    if criteria is None:
        return not_judged(run_id, refused, registration)
    if not figures.run.get(next(iter(kind.store.counts))):
        return not_judged(run_id, "the run registered no rows: there is nothing to judge (an empty task-set "
                                  "version, or no seeds)", registration)
    return judge(figures, criteria, kind.judges, registration, not_carried_out=kind.not_carried_out(figures),
                 items=kind.words.items)


def save_verdict(warehouse: Warehouse, verdict: Verdict) -> Path | None:
    from tasks.files.atomic_write import write_atomic

    if verdict.status == "NO CRITERIA":
        return None
    return write_atomic(warehouse.registrations_dir / verdict.run_id / VERDICT_FILE, verdict.model_dump_json(indent=2))


def load_verdict(warehouse: Warehouse, run_id: str) -> Verdict | None:
    path = warehouse.registrations_dir / run_id / VERDICT_FILE
    return Verdict.model_validate_json(path.read_text()) if path.is_file() else None


def read_report(warehouse: Warehouse, run_id: str | None = None, instrument_name: str | None = None,
                keep: bool = False) -> Report:
    """The report of a run (default: the latest) with its recorded verdict (judged now if none was kept).

    ``keep``: keep its tables beside the report files for the next ``tooleval report``
    (tasks/report/stored_report.py) when the warehouse file is settled."""
    from tasks.report import stored_report as kept

    held = kept.HeldState(warehouse)
    latest: dict[str, str | None] = {}
    name, figures = read_figures(warehouse, run_id, instrument_name, latest, once_read=held.take if keep else None)
    registration = kept.registration_stamp(warehouse, figures.run_id)  # before the verdict is read or judged
    verdict = load_verdict(warehouse, figures.run_id) or judge_registered(instrument(name), figures, warehouse,
                                                                           check_source=False)
    report = report_reader(name).build_report(figures, verdict)
    kept.store_report(warehouse, held.state, registration, name, report, latest)
    return report


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
    from tasks.drill_points import reached
    from tasks.report.render import write_report_files
    from tasks.report.stored_report import SETTLE_WAIT_S, HeldState, registration_stamp, store_report

    held = HeldState(warehouse, SETTLE_WAIT_S)  # the file's state the figures were read from: the kept copy's key
    latest: dict[str, str | None] = {}
    name, figures = read_figures(warehouse, run_id, latest_out=latest, once_read=held.take)
    kind = instrument(name)
    verdict = judge_registered(kind, figures, warehouse, check_source=True)
    save_verdict(warehouse, verdict)
    reached("report-verdict-saved", run_id)
    registration = registration_stamp(warehouse, run_id)  # with the verdict just saved
    report = kind.build_report(figures, verdict)
    paths = write_report_files(report, warehouse.reports_dir / run_id)
    store_report(warehouse, held.state, registration, name, report, latest)
    return PublishedReport(report, paths)
