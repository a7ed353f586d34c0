"""Calibrating a new task-set version, on given task rows: the same arm on t1 and t2, read
unpaired over each version's own tasks beside the paired figure on the tasks both share.

- t2 = t1 plus 5 harder tasks: paired on the 20 shared tasks it reads 83.3% -> 83.3% (nothing changed on the
  tasks both ask), while each version's own tasks read 83.3% (20) -> 66.7% (25), -16.7 points: the
  difficulty t2 adds, which the paired figure cannot see;
- t2 shares no task with t1: no paired figure and a note saying so; the unpaired figure is still there.
"""

from __future__ import annotations

import math

import pytest

from tasks.report.render import render_html, render_markdown, render_text
from tasks.surface.figures import load_surface_figures
from tasks.surface.tables import build_surface_report
from tests.surface.known_task_rows import RUN, KnownTaskRun, run_row

SEEDS = (1, 2, 3)


def task_rows(arm: str, rung: int, version: str, task_id: str, right_seeds: int) -> list[dict]:
    """One task under three seeds, right under the first ``right_seeds`` of them."""
    return [{**run_row(task_id, arm=arm, rung=rung, seed=seed, success=seed <= right_seeds),
             "taskset_version": version} for seed in SEEDS]


def t1_tasks(arm: str, rung: int, version: str) -> list[dict]:
    """20 tasks: 15 right under every seed, 5 right under one of three: 50 of 60 runs = 83.3%."""
    rows = []
    for i in range(20):
        rows += task_rows(arm, rung, version, f"t{i:03d}", 3 if i < 15 else 1)
    return rows


def calibration_run(new_tasks: list[dict]) -> KnownTaskRun:
    run = KnownTaskRun(arms={"A-t1": {}, "A-t2": {}}, comparisons=[("A-t1", "A-t2", ["version"])])
    run.runs += t1_tasks("A-t1", 1, "t1") + new_tasks
    run.finish()
    run.con.execute("UPDATE task_arms SET taskset_version = 't2' WHERE arm = 'A-t2'")
    return run


@pytest.fixture(scope="module")
def harder():
    """t2 = t1's 20 tasks, answered alike, plus 5 harder tasks failed under every seed."""
    extra = []
    for i in range(5):
        extra += task_rows("A-t2", 2, "t2", f"h{i:03d}", 0)
    con = calibration_run(t1_tasks("A-t2", 2, "t2") + extra).con
    return load_surface_figures(con, RUN)


@pytest.fixture(scope="module")
def disjoint():
    """t2 shares no task with t1: 12 other tasks, 11 right under every seed (91.7%)."""
    rows = []
    for i in range(12):
        rows += task_rows("A-t2", 2, "t2", f"u{i:03d}", 3 if i < 11 else 0)
    con = calibration_run(rows).con
    return load_surface_figures(con, RUN)


def test_the_paired_figure_reads_equal_while_each_versions_own_tasks_show_the_drop(harder):
    (c,) = harder.version_calibrations
    assert (c.baseline, c.arm, c.old_version, c.new_version, c.slice) == ("A-t1", "A-t2", "t1", "t2", "s")
    # paired on the shared tasks: the same 20 tasks, the same verdicts -> "83.3% -> 83.3%"
    assert c.n_shared == 20 and c.shared.worse == c.shared.better == 0
    assert c.shared.accuracy_from == pytest.approx(50 / 60) and c.shared.accuracy_to == pytest.approx(50 / 60)
    assert c.shared.change.estimate == 0
    # each version's own tasks: 50/60 on t1's 20 tasks, 50/75 on t2's 25 -> -16.7 points
    assert (c.units_old, c.units_new) == (20, 25)
    assert c.own.before.estimate == pytest.approx(50 / 60) and c.own.after.estimate == pytest.approx(50 / 75)
    assert c.own.change.estimate == pytest.approx(50 / 75 - 50 / 60)
    assert c.own.change.low < c.own.change.estimate < c.own.change.high


def test_the_unpaired_interval_combines_the_success_tables_intervals(harder):
    # each side's interval is the success table's (SQL, task-clustered Wilson); the difference is MOVER over
    # the two, correlated through the 20 shared tasks (Zou & Donner): with a = p2 - l2, b = u1 - p1,
    # low = d - sqrt(a^2 + b^2 - 2 r a b), and the same with the other two distances for high. Residuals
    # e = k - p m: t1 0.5 (x15), -1.5 (x5); t2 1 (x15), -1 (x5), -2 (x5 added): r = 15 / sqrt(15 x 40)
    (c,) = harder.version_calibrations
    success = {r["arm"]: r for r in harder.success}
    old, new = success["A-t1"], success["A-t2"]
    assert c.own.before.low == pytest.approx(old["ci_low"], abs=1e-12)
    assert c.own.after.high == pytest.approx(new["ci_high"], abs=1e-12)
    r = 15 / math.sqrt(600)
    assert c.own.correlation == pytest.approx(r)
    p1, p2 = old["success_rate"], new["success_rate"]
    d = p2 - p1
    a, b = p2 - new["ci_low"], old["ci_high"] - p1
    low = d - math.sqrt(a * a + b * b - 2 * r * a * b)
    a, b = new["ci_high"] - p2, p1 - old["ci_low"]
    high = d + math.sqrt(a * a + b * b - 2 * r * a * b)
    assert (c.own.change.low, c.own.change.high) == (pytest.approx(low), pytest.approx(high))
    assert high < 0  # the 5 added tasks make t2 harder, beyond the interval's reach


def test_the_report_shows_both_figures_labelled_beside_the_paired_comparisons(harder):
    report = build_surface_report(harder, None)
    keys = [t.key for t in report.tables]
    assert keys.index("version-calibration") == keys.index("comparisons") + 1
    table = next(t for t in report.tables if t.key == "version-calibration")
    paired_row, own_row = table.rows
    assert paired_row[:5] == ["A-t1 → A-t2", "s", "paired on 20 shared tasks", "t1 83.3% → t2 83.3%", "0.0"]
    assert own_row[2:5] == ["each version's own tasks", "t1 83.3% (20) → t2 66.7% (25)", "-16.7"]
    assert (own_row[5], own_row[6]) == ("-31.7 to -2.2", "t2 harder")
    text = render_text(report, 10**4)
    assert "paired on 20 shared tasks" in text and "t1 83.3% (20) → t2 66.7% (25)" in text
    assert "each version's own tasks" in render_markdown(report)  # a summary table: in the PR comment too
    assert "paired on 20 shared tasks" in render_html(report)


def test_a_version_that_shares_no_task_gets_a_note_and_keeps_the_unpaired_figure(disjoint):
    (c,) = disjoint.version_calibrations
    assert c.shared is None and c.n_shared == 0
    assert (c.units_old, c.units_new) == (20, 12)
    assert c.own.change.estimate == pytest.approx(33 / 36 - 50 / 60)
    report = build_surface_report(disjoint, None)
    comparisons = next(t for t in report.tables if t.key == "comparisons")
    assert comparisons.rows == []  # nothing to pair: the paired table is empty ...
    table = next(t for t in report.tables if t.key == "version-calibration")
    assert table.rows[0][2:4] == ["paired on 0 shared tasks", "nothing shared: no paired figure"]
    assert table.rows[1][3] == "t1 83.3% (20) → t2 91.7% (12)"
    assert "No task in common, so no paired figure: A-t1 → A-t2 (t1 → t2), slice s" in table.note
    assert "No task in common" in render_text(report, 10**4)  # ... and the report says why, beside it


def test_runs_without_a_version_change_have_no_calibration_table():
    run = KnownTaskRun(arms={"A": {}, "C": {"surface_hash": "s1"}}, comparisons=[("A", "C", ["surface"])])
    for arm, rung in (("A", 1), ("C", 2)):
        run.runs += [run_row("t000", arm=arm, rung=rung, success=True)]
    figures = load_surface_figures(run.finish(), RUN)
    assert figures.version_calibrations == []
    assert "version-calibration" not in [t.key for t in build_surface_report(figures, None).tables]


def test_a_surface_x_version_interaction_names_both_versions_and_marks_the_version_as_measuring_nothing():
    """A and B (surface s1) run t1, C and D (surface s1) run t2 over the same 20 tasks: the 2x2 names both
    versions with their arms (not "version t1"), and says the version measures nothing on the shared tasks."""
    arms = {"A": {}, "B": {"surface_hash": "s1"}, "C": {}, "D": {"surface_hash": "s1"}}
    run = KnownTaskRun(arms=arms, comparisons=[("A", "B", ["surface"]), ("A", "C", ["version"]),
                                               ("C", "D", ["surface"])])
    for rung, (arm, version, right) in enumerate((("A", "t1", 10), ("B", "t1", 15), ("C", "t2", 10),
                                                  ("D", "t2", 15)), start=1):
        run.runs += [{**run_row(f"t{i:03d}", arm=arm, rung=rung, success=i < right), "taskset_version": version}
                     for i in range(20)]
    run.finish()
    run.con.execute("UPDATE task_arms SET taskset_version = 't2' WHERE arm IN ('C', 'D')")
    report = build_surface_report(load_surface_figures(run.con, RUN), None)
    (table,) = [t for t in report.tables if t.title.startswith("Interaction")]
    assert "(version t1)" not in table.title
    assert "(versions t1: A, B; t2: C, D)" in table.title
    assert "version (measures nothing)" in table.title and "surface (measures nothing)" not in table.title
    assert "The version measures nothing here: the table is computed on the tasks all four arms ran" in table.note
    assert table.rows[0][3] == "+25.0 / 0.0"  # the surface's effect, the version's (0 on the shared tasks)
