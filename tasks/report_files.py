"""Read a run's report from the warehouse file and write its markdown and HTML beside the data."""

from __future__ import annotations

from pathlib import Path

from tasks.render_report import write_report_files
from tasks.report_tables import Report, build_report, latest_run_id
from warehouse.connect import connect
from warehouse.location import Warehouse


def read_report(warehouse: Warehouse, run_id: str | None = None) -> Report:
    if not warehouse.db_path.is_file():
        raise FileNotFoundError(f"no warehouse at {warehouse.db_path}: run `tooleval run EXPERIMENT` first")
    con = connect(warehouse.db_path, read_only=True)
    try:
        run_id = run_id or latest_run_id(con)
        if run_id is None:
            raise KeyError(f"no run registered in {warehouse.db_path}")
        return build_report(con, run_id)
    finally:
        con.close()


def publish_report(warehouse: Warehouse, run_id: str) -> dict[str, Path]:
    """Write reports/<run_id>/report.md and report.html; returns their paths."""
    return write_report_files(read_report(warehouse, run_id), warehouse.reports_dir / run_id)
