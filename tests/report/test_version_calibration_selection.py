"""Calibrating a new task-set version in a selection run, on given rows: the same arm on v1
and v2 (a comparison whose only change is the version), each version's own requests read unpaired beside
the paired figure on the requests both share, and a note when they share none."""

from __future__ import annotations

import pytest

from tasks.report.render import render_markdown, render_text
from tasks.selection.figures import load_figures
from tasks.selection.tables import build_report_from
from tests.factories.rows import RUN, KnownRun, selection_row


def requests(arm: str, rung: int, version: str, prefix: str, right: int, wrong: int) -> list[dict]:
    """``right`` requests right and ``wrong`` wrong under each of three seeds (seeds agree)."""
    return [selection_row(f"{prefix}-{i:03d}", "refund_order", i < right, arm=arm, rung=rung, seed=seed,
                          taskset_version=version)
            for i in range(right + wrong) for seed in (1, 2, 3)]


def version_run(new_rows: list[dict]):
    run = KnownRun(arms=("base.v1", "base.v2"), comparisons=[("base.v1", "base.v2", ["version"])], seeds=3)
    run.arm_respects("base.v2", taskset_version="v2")
    run.add(requests("base.v1", 1, "v1", "r", 50, 10) + new_rows)
    return load_figures(run.finish(), RUN)


def test_five_harder_requests_added_show_in_the_unpaired_figure_and_not_in_the_paired_one():
    # v2 = v1's 60 requests answered alike (50 right) plus 5 harder ones, all wrong: 50/60 -> 50/65
    figures = version_run(requests("base.v2", 2, "v2", "r", 50, 10) + requests("base.v2", 2, "v2", "h", 0, 5))
    (c,) = figures.version_calibrations
    assert c.shared.n_requests == 60 and c.shared.change.estimate == 0 and c.shared.discordant == 0
    assert (c.units_old, c.units_new) == (60, 65)
    assert c.own.change.estimate == pytest.approx(50 / 65 - 50 / 60)
    assert c.own.change.high < 0  # seeds agree: r = 1 on the shared requests, only the 5 added carry the change
    table = next(t for t in build_report_from(figures).tables if t.key == "version-calibration")
    assert table.rows[0][2:5] == ["paired on 60 shared requests", "v1 83.3% → v2 83.3%", "0.0"]
    assert table.rows[1][2:5] == ["each version's own requests", "v1 83.3% (60) → v2 76.9% (65)", "-6.4"]
    assert table.rows[1][6] == "v2 harder"


def test_a_version_sharing_no_request_gets_a_note_and_the_unpaired_figure():
    # the version calibration's reading, on requests: 61% on v1 and 79% on v2 -> v2 is 18 points easier
    figures = version_run(requests("base.v2", 2, "v2", "n", 79, 21))
    assert figures.slice_changes == []  # nothing to pair ...
    (c,) = figures.version_calibrations
    assert c.shared is None
    report = build_report_from(figures)
    table = next(t for t in report.tables if t.key == "version-calibration")
    assert table.rows[0][2:4] == ["paired on 0 shared requests", "nothing shared: no paired figure"]
    assert table.rows[1][3] == "v1 83.3% (60) → v2 79.0% (100)"
    assert "No request in common, so no paired figure" in table.note
    assert "No request in common" in render_text(report, 10**4)  # ... and the report says so
    assert "each version's own requests" in render_markdown(report)


def test_seed_001s_reading_61_on_v1_and_79_on_v2_is_computed():
    run = KnownRun(arms=("A.v1", "A.v2"), comparisons=[("A.v1", "A.v2", ["version"])], seeds=3)
    run.arm_respects("A.v2", taskset_version="v2")
    run.add(requests("A.v1", 1, "v1", "a", 61, 39) + requests("A.v2", 2, "v2", "b", 79, 21))
    (c,) = load_figures(run.finish(), RUN).version_calibrations
    assert (round(100 * c.own.before.estimate), round(100 * c.own.after.estimate)) == (61, 79)
    assert round(100 * c.own.change.estimate) == 18 and c.own.change.low > 0  # 100 requests each: v2 easier
