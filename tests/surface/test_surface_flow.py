"""The evaluate flow running a task experiment end to end under Prefect (one harness for the module), the CLI around it, and bad
input that leaves the warehouse untouched."""

from __future__ import annotations

import html
import json

import duckdb
import pytest

from flows.cli import main
from flows.api import run_experiment
from tasks.files.input_errors import InputError
from tests.surface.tiny_desk import write_desk

CRITERIA = """\
name: desk
gates:
  - {name: floors, kind: success_floor, floors: {tickets: 0.0}, arms: all}
  - {name: pages, kind: irreversible_actions, max_increase_per_100: 50}
  - {name: tools, kind: tool_invalid_rate, max_rate: 1.0, min_calls: 1, arms: all}
"""


@pytest.fixture(scope="module")
def flow_run(prefect_harness, tmp_path_factory):
    from flows.evaluate import evaluate

    root = tmp_path_factory.mktemp("flow")
    folder = write_desk(root)
    experiment = folder / "experiments" / "four.yaml"
    experiment.write_text(experiment.read_text().replace("batch_size: 3", "batch_size: 3\ncriteria: criteria.yaml"))
    (folder / "experiments" / "criteria.yaml").write_text(CRITERIA)
    warehouse = root / "wh"
    first = evaluate(experiment_path=str(experiment), warehouse_dir=str(warehouse))
    again = evaluate(experiment_path=str(experiment), warehouse_dir=str(warehouse))
    return folder, warehouse, first, again


def test_the_flow_lands_one_row_per_arm_seed_task_and_one_per_call(flow_run):
    folder, warehouse, first, _ = flow_run
    assert first.n_rows == 4 * 3 * 4 and first.n_units == 4 * 3 * 2
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    (runs, calls, arms, comparisons) = con.execute(
        "SELECT (SELECT count(*) FROM task_runs WHERE run_id = $1), (SELECT count(*) FROM task_calls WHERE run_id = $1),"
        " (SELECT count(*) FROM task_arms WHERE run_id = $1), (SELECT count(*) FROM task_comparisons WHERE run_id = $1)",
        [first.run_id]).fetchall()[0]
    assert (runs, arms, comparisons) == (48, 4, 3) and calls > 0
    assert calls == con.execute("SELECT sum(n_calls) FROM task_runs WHERE run_id = ?", [first.run_id]).fetchall()[0][0] \
        + con.execute("SELECT count(*) FROM task_calls WHERE run_id = ? AND skipped_budget", [first.run_id]).fetchall()[0][0]
    success = con.execute("SELECT arm, slice, n, successes FROM task_success WHERE run_id = ? ORDER BY rung, slice",
                          [first.run_id]).fetchall()
    assert {(r[0], r[1], r[2]) for r in success} >= {("A", "tickets", 9), ("A", "questions", 3)}
    registered_at = con.execute("SELECT criteria_registered_at, started_at FROM task_experiments WHERE run_id = ?",
                                [first.run_id]).fetchall()[0]
    assert registered_at[0] >= registered_at[1]
    con.close()
    assert first.verdict is not None and first.verdict.status == "PASS"
    text = html.unescape((warehouse / "reports" / first.run_id / "report.html").read_text())
    assert "VERDICT: PASS" in text and "run the offline baseline agent" in text
    assert "A -> B" in text and "(measures nothing)" in text
    assert "Interaction: prompt (measures nothing) x surface" in text


def test_an_unchanged_rerun_runs_no_task_again(flow_run):
    _, warehouse, first, again = flow_run
    assert again.run_id != first.run_id and again.n_cache_hits == again.n_rows == 48
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    same = con.execute("""
        SELECT count(*) FROM task_runs a JOIN task_runs b USING (arm, seed, task_id)
        WHERE a.run_id = ? AND b.run_id = ? AND a.success = b.success AND a.n_calls = b.n_calls""",
                       [first.run_id, again.run_id]).fetchall()[0][0]
    assert same == 48
    con.close()


def test_the_cli_reports_validates_and_writes_catalogues(flow_run, capsys, tmp_path):
    folder, warehouse, first, again = flow_run
    assert main(["tasks", "report", first.run_id, "--warehouse", str(warehouse)]) == 0
    assert "Per-tool counters, arm C" in capsys.readouterr().out
    assert main(["tasks", "report", "--warehouse", str(warehouse), "--format", "markdown"]) == 0
    assert capsys.readouterr().out.startswith(f"## tooleval tasks: ✔ PASS — run `{again.run_id}`")
    assert main(["tasks", "validate", str(folder / "t1.jsonl")]) == 0
    assert "OK" in capsys.readouterr().out
    out = tmp_path / "desk-prefixed.json"
    assert main(["tasks", "catalogue", str(folder / "surfaces" / "prefixed.yaml"), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["tools"][0]["name"] == "desk.find_tickets"
    assert main(["tasks", "report", "nope", "--warehouse", str(warehouse)]) == 2
    assert "[run-registered] no such task run" in capsys.readouterr().err


def test_bad_input_stops_before_any_run_and_writes_nothing(tmp_path, capsys):
    folder = write_desk(tmp_path, tasks=[{"id": "x", "request": "Close T-1001.", "slice": "tickets",
                                          "assert": {"tool": "close_ticket", "args": {"id": {"regex": "("}}}}],
                        freeze=False)
    (folder / "t1.manifest.json").write_text('{"taskset": "desk", "version": "t1", "created_at": "2026-12-01T00:00:00Z",'
                                             ' "slices": ["tickets"], "content_hash": "x", "n_tasks": 1,'
                                             ' "counts_by_slice": {}}')
    warehouse = tmp_path / "wh"
    with pytest.raises(InputError) as raised:
        run_experiment(folder / "experiments" / "four.yaml", warehouse=warehouse)
    assert "t1.jsonl:line 1 (id x): [task-schema]" in str(raised.value)
    assert not warehouse.exists()
    assert main(["tasks", "validate", str(folder / "t1.jsonl")]) == 2
    assert "bad input, nothing was run or written" in capsys.readouterr().err


def test_a_hosted_agent_arm_runs_through_the_flow_and_no_key_reaches_a_file(prefect_harness, tmp_path, monkeypatch):
    from flows.evaluate import evaluate
    from tests.provider_server import ProviderServer
    from tests.selectors.providers.conftest import FAKE_KEY
    from tests.surface.tiny_desk import close_ticket_script, hosted_desk_experiment

    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with ProviderServer(close_ticket_script, api_key=FAKE_KEY) as server:
        folder = write_desk(tmp_path, experiment=hosted_desk_experiment(server.openai_url, "a flow test"))
        summary = evaluate(experiment_path=str(folder / "experiments" / "four.yaml"),
                              warehouse_dir=str(tmp_path / "wh"))
    assert summary.n_rows == 2 * 2 * 4 and summary.n_failures == 0 and summary.n_calls == 2 * 2 * 4 * 2
    con = duckdb.connect(str(tmp_path / "wh" / "tooleval.duckdb"), read_only=True)
    rows = con.execute("SELECT arm, task_id, success, n_turns, input_tokens > 0, cost_usd > 0, served_model_id, "
                       "first_tool FROM task_runs WHERE task_id = 'close-1' ORDER BY arm, seed").fetchall()
    con.close()
    assert [r[:3] for r in rows] == [("A", "close-1", True)] * 2 + [("C", "close-1", True)] * 2
    assert all(r[3] == 2 and r[4] and r[5] and r[6] == "gpt-4.1-mini-2025-04-14" for r in rows)
    assert {r[7] for r in rows} == {"close_ticket", "desk.close_ticket"}  # mapped back from desk_close_ticket
    leaked = [p for p in (tmp_path / "wh").rglob("*") if p.is_file() and FAKE_KEY.encode() in p.read_bytes()]
    assert leaked == []


def test_the_preflight_refuses_a_warehouse_that_cannot_be_written(tmp_path):
    folder = write_desk(tmp_path)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the warehouse should go")
    with pytest.raises(InputError) as raised:
        run_experiment(folder / "experiments" / "four.yaml", warehouse=blocker)
    assert "[warehouse-writable] the warehouse folder is a file, not a folder" in str(raised.value)
