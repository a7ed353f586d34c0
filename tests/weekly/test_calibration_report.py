"""The calibration of a new task-set version on known rows: the views it reads (version_calibration,
label_status_counts), the provisional-labels notice, and the calibration report."""

from __future__ import annotations

import duckdb
import pytest

from tasks.taskset.provisional_labels import provisional_notice
from tasks.weekly.calibration_report import calibration_markdown, calibration_report
from tests.factories.rows import KnownRun, selection_row


def version_rows(arm: str, version: str, tool: str, n: int, n_correct: int, status: str = "adjudicated") -> list[dict]:
    return [selection_row(f"{version}-{tool}-{i}", tool, i < n_correct, arm=arm, rung=1 if version == "v1" else 2,
                          taskset_version=version, label_status=status) for i in range(n)]


@pytest.fixture
def calibrated() -> duckdb.DuckDBPyConnection:
    """Run 'run1': arm prod.v1 on v1 and prod.v2 on v2 (provisional), compared on the version only."""
    known = KnownRun(arms=["prod.v1", "prod.v2"], comparisons=[("prod.v1", "prod.v2", ["version"])])
    known.add(version_rows("prod.v1", "v1", "refund", 10, 8) + version_rows("prod.v1", "v1", "track", 4, 4)
              + version_rows("prod.v2", "v2", "refund", 20, 10, "provisional")
              + version_rows("prod.v2", "v2", "promo", 5, 5, "provisional"))
    for version in ("v1", "v2"):
        known.arm_respects(f"prod.{version}", taskset_version=version, taskset_hash=version)
    con = known.finish()
    yield con
    con.close()


def test_version_calibration_view_on_known_rows(calibrated):
    rows = {r[0]: r[1:] for r in calibrated.execute(
        "select tool, old_requests, old_accuracy, new_requests, new_accuracy, difference from version_calibration "
        "where run_id = 'run1' and old_arm = 'prod.v1' and new_arm = 'prod.v2'").fetchall()}
    assert rows["refund"] == (10, 0.8, 20, 0.5, pytest.approx(-0.3))
    assert rows["track"] == (4, 1.0, None, None, None)
    assert rows["promo"] == (None, None, 5, 1.0, None)


def test_label_status_counts_and_the_notice(calibrated):
    counts = calibrated.execute("select taskset_version, label_status, n_requests from label_status_counts "
                                "where run_id = 'run1' order by 1").fetchall()
    assert counts == [("v1", "adjudicated", 14), ("v2", "provisional", 25)]
    (line,) = provisional_notice(calibrated, "run1")
    assert line.startswith("PROVISIONAL LABELS: v2 has 25 of 25 requests") and "--allow-provisional" in line


def test_calibration_report_reads_the_difference_per_slice_and_tool(calibrated):
    report = calibration_report(calibrated, "run1", "prod.v1", "prod.v2")
    assert (report.old_version, report.new_version) == ("v1", "v2")
    assert report.differences["existing"] == pytest.approx(15 / 25 - 12 / 14)
    text = calibration_markdown(report)
    assert "Calibration v2 vs v1" in text and "PROVISIONAL LABELS" in text and "| refund | 80.0% | 10 | 50.0% | 20 | -30.0 |" in text




def test_weekly_reports_of_the_same_window_and_version_land_per_run(tmp_path):
    from tasks.weekly.weekly_report import WeeklyReport, write_weekly_report
    from warehouse.location import Warehouse

    warehouse = Warehouse(tmp_path)
    first = write_weekly_report(warehouse, WeeklyReport("week", ["run one"], []), "calibration one",
                                "2026-W44-W47", "v2", "run-1")
    second = write_weekly_report(warehouse, WeeklyReport("week", ["run two"], []), None, "2026-W44-W47", "v2", "run-2")
    assert first["weekly"] != second["weekly"]
    assert "run one" in first["weekly"].read_text() and "run two" in second["weekly"].read_text()
    assert first["weekly"] == tmp_path / "reports" / "weekly" / "2026-W44-W47-v2" / "run-1" / "weekly.md"
