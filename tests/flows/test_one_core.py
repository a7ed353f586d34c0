"""Both instruments share one experiment -> run -> verdict path: what a separate copy of the core for the
surface instrument got wrong, each checked as a user meets it, through the ``tooleval`` command."""

from __future__ import annotations

import os
import textwrap
import time

import duckdb
import pytest

from flows.cli import main
from flows.exit_codes import EXIT_BAD_INPUT, EXIT_NOT_JUDGED, EXIT_NOT_REGISTERED, EXIT_OK
from tests.factories.cli import run_cli
from tests.factories.processes import hold
from tests.factories.taskset import write_experiment, write_taskset
from tests.surface.tiny_desk import write_desk

DESK_CRITERIA = """\
name: desk
gates:
  - {name: floors, kind: success_floor, floors: {tickets: 0.0}, arms: all}
  - {name: tools, kind: tool_invalid_rate, max_rate: 1.0, min_calls: 1, arms: all}
"""


def desk_experiment(root, criteria: str = DESK_CRITERIA, experiment: str | None = None):
    folder = write_desk(root, experiment=experiment)
    path = folder / "experiments" / "four.yaml"
    path.write_text(path.read_text() + "criteria: criteria.yaml\n")
    (folder / "experiments" / "criteria.yaml").write_text(criteria)
    return path


def task_run_ids(warehouse) -> list[str]:
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        return [r for (r,) in con.execute("SELECT run_id FROM task_experiments ORDER BY finished_at").fetchall()]
    finally:
        con.close()


def test_a_selection_run_keeps_a_finished_task_runs_criteria_and_verdict(prefect_harness, tmp_path, capsys):
    warehouse = tmp_path / "wh"
    tasks_experiment = desk_experiment(tmp_path)
    assert run_cli(capsys, "tasks", "run", tasks_experiment, "--warehouse", warehouse)[0] == EXIT_OK
    (task_run,) = task_run_ids(warehouse)
    selection = write_experiment(write_taskset(tmp_path / "shop"))
    code, out, err = run_cli(capsys, "run", selection, "--warehouse", warehouse)
    assert task_run not in out + err
    ten_minutes_ago = time.time() - 600 - 60
    for path in [*(warehouse / "registrations" / task_run).rglob("*"), warehouse / "registrations" / task_run]:
        os.utime(path, (ten_minutes_ago, ten_minutes_ago))
    code, out, err = run_cli(capsys, "run", selection, "--warehouse", warehouse)
    assert task_run not in out + err and "removed the records" not in out
    assert (warehouse / "registrations" / task_run / "criteria.yaml").is_file()
    code, out, _ = run_cli(capsys, "tasks", "report", task_run, "--warehouse", warehouse)
    assert code == EXIT_OK and "VERDICT: PASS" in out and "NO CRITERIA" not in out


def test_a_task_run_that_no_gate_could_judge_is_not_judged(prefect_harness, tmp_path, capsys):
    one_arm = textwrap.dedent("""\
        name: desk-one
        taskset: ..
        version: t1
        seeds: [1, 2, 3]
        defaults: {agent: baseline}
        arms:
          - {name: A, surface: plain, prompt: default}
        """)
    skipped = textwrap.dedent("""\
        name: nothing-applies
        gates:
          - {name: no-drop, kind: success_drop, max_drop_points: 5}
          - {name: tools, kind: tool_invalid_rate, max_rate: 0.25, min_calls: 100000, arms: all}
        """)
    experiment = desk_experiment(tmp_path, skipped, one_arm)
    code, out, _ = run_cli(capsys, "tasks", "run", experiment, "--warehouse", tmp_path / "wh")
    assert code == EXIT_NOT_JUDGED and "NOT JUDGED" in out


@pytest.mark.parametrize("seeds, rule", [([-1, 2, 3], "[seed-range]"), ([1, 2, 2 ** 63], "[seed-range]")])
def test_task_seeds_follow_the_selection_rules(prefect_harness, tmp_path, capsys, seeds, rule):
    experiment = desk_experiment(tmp_path)
    experiment.write_text(experiment.read_text().replace("seeds: [1, 2, 3]", f"seeds: {seeds}"))
    code, _, err = run_cli(capsys, "tasks", "run", experiment, "--warehouse", tmp_path / "wh")
    assert code == EXIT_BAD_INPUT and rule in err
    assert not (tmp_path / "wh").exists()


def test_task_run_caps_follow_the_selection_rules(tmp_path, capsys):
    experiment = desk_experiment(tmp_path)
    for flag in ("--max-calls", "--max-spend-usd"):
        with pytest.raises(SystemExit) as stopped:
            main(["tasks", "run", str(experiment), flag, "-5"])
        assert stopped.value.code == 2 and "must be 0 or more" in capsys.readouterr().err


def test_task_success_intervals_are_the_small_sample_corrected_ones(con):
    from schemas.surface.rows import TaskRunRow
    from tasks.stats.wilson import clustered_wilson_interval
    from tests.factories.rows import insert
    from tests.surface.known_task_rows import run_row

    # 20 tasks x 3 seeds at 90%: 16 always right, 2 right twice, 2 right once
    successes = [3] * 16 + [2, 2, 1, 1]
    rows = [run_row(f"t{i:02d}", seed=seed, success=seed <= k) for i, k in enumerate(successes) for seed in (1, 2, 3)]
    insert(con, "task_runs", TaskRunRow, rows)
    low, high, n_effective = con.execute("SELECT ci_low, ci_high, n_effective FROM task_success").fetchall()[0]
    expected = clustered_wilson_interval(successes, [3] * len(successes))
    assert (low, high) == pytest.approx((expected.low, expected.high), abs=1e-12)


def test_task_runs_register_later_when_the_warehouse_is_held(prefect_harness, tmp_path, capsys, monkeypatch):
    warehouse = tmp_path / "wh"
    experiment = desk_experiment(tmp_path)
    assert run_cli(capsys, "tasks", "run", experiment, "--warehouse", warehouse)[0] == EXIT_OK
    monkeypatch.setenv("TOOLEVAL_LOCK_WAIT_S", "1")
    holder = hold(warehouse / "tooleval.duckdb", 120)  # an analyst's read-only session in another process
    try:
        code, _, err = run_cli(capsys, "tasks", "run", experiment, "--warehouse", warehouse)
        assert code == EXIT_NOT_REGISTERED and "tooleval register" in err
        run_id = err.split("tooleval register ")[1].split()[0]
    finally:
        holder.kill()
        holder.wait()
    code, out, _ = run_cli(capsys, "register", run_id, "--warehouse", warehouse)
    assert code == EXIT_OK and run_id in out
    assert task_run_ids(warehouse)[-1] == run_id
    assert (warehouse / "reports" / run_id / "report.html").is_file()


def test_task_runs_show_progress_take_a_task_runner_and_write_every_report(prefect_harness, tmp_path, capsys):
    experiment = desk_experiment(tmp_path)
    code, out, err = run_cli(capsys, "tasks", "run", experiment, "--warehouse", tmp_path / "wh",
                             "--task-runner", "thread")
    assert code == EXIT_OK and "progress: units 24/24" in err
    (run_id,) = task_run_ids(tmp_path / "wh")
    folder = tmp_path / "wh" / "reports" / run_id
    assert {"report.html", "report.md"} <= {p.name for p in folder.iterdir()}
    assert "VERDICT: PASS" in (folder / "report.html").read_text()
    verdict = tmp_path / "wh" / "registrations" / run_id / "verdict.json"
    assert verdict.is_file() and not list(verdict.parent.glob(".tmp-*"))
