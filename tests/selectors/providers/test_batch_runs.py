"""Whole runs with ``batch``, through the Prefect flow and the ``tooleval`` command, against the loopback server's
batch endpoints (tests/batch_server.py): a batch run and a synchronous run of one experiment give the same rows
and figures at half the cost; a run killed (-9) while it waits on its batches, then rerun, submits no request
twice and lands every row once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import psutil
import pytest

from flows.evaluate import MAX_WORKERS
from tests.batch_server import BatchServer
from tests.drill.harness import cli_env
from tests.factories import ROOT
from tests.factories.prefect_api import migrated_home
from tests.factories.catalogues import support_tools
from tests.provider_server import oracle
from tests.selectors.providers.conftest import FAKE_KEY, MODELS
from tests.selectors.providers.example_arguments import example_arguments
from tests.selectors.providers.test_provider_flow import trimmed_support

pytestmark = pytest.mark.slow  # Prefect runs; the kill test runs the tooleval command twice

SEEDS = [1, 2, 3]
FIGURES = {
    "aggregate_accuracy": "arm, slice, n, correct, accuracy, ci_low, ci_high",
    "per_tool_accuracy": "arm, slice, tool, n, correct, accuracy, seed_min, seed_max",
    "argument_accuracy": "* exclude (run_id)",
}


def experiment(support: Path, server: BatchServer, name: str, poll_s: float = 0.05, batch: str = "") -> Path:
    path = support / "experiments" / f"{name}.yaml"
    arms = "".join(
        f"  - {{name: {kind}, catalogue: giftcards, prompt: default, selector: {kind}, model: {MODELS[kind]},\n"
        f"     options: {{base_url: \"{server.openai_url if kind == 'openai' else server.anthropic_url}\", "
        f"batch_poll_s: {poll_s}}}}}\n" for kind in ("openai", "anthropic"))
    path.write_text(f"name: {name}\ntaskset: ..\nversion: v1\nseeds: {SEEDS}\n{batch}arms:\n{arms}"
                    "comparisons: [{from: openai, to: anthropic, declare: [selector]}]\n")
    return path


def figures(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, list[tuple]]:
    found = {}
    for view, columns in FIGURES.items():
        rows = con.execute(f"select {columns} from {view} where run_id = ? order by all", [run_id]).fetchall()
        found[view] = rows
    return found


def test_a_batch_run_gives_the_rows_and_figures_of_a_synchronous_run_at_half_the_cost(
        prefect_harness, support_copy, warehouse_dir):
    from flows.evaluate import evaluate

    expected = trimmed_support(support_copy)
    arguments = {t.name: example_arguments(t.parameters) for t in support_tools()}
    with BatchServer(oracle(expected, arguments), api_key=FAKE_KEY, polls_to_end=2) as server:
        os.environ.setdefault("OPENAI_API_KEY", FAKE_KEY)
        path = experiment(support_copy, server, "both")
        calls = evaluate(experiment_path=str(path), warehouse_dir=str(warehouse_dir), use_cache=False)
        assert not server.batches
        batched = evaluate(experiment_path=str(path), warehouse_dir=str(warehouse_dir), use_cache=False, batch=True)
        assert len(server.batches) == 2 * len(SEEDS)  # one per unit (arm x seed)
        assert set(server.submissions.values()) == {1}
    n = 2 * len(SEEDS) * len(expected)
    assert calls.n_rows == batched.n_rows == n and batched.n_calls == calls.n_calls == n
    assert batched.spend_usd == pytest.approx(calls.spend_usd / 2, rel=1e-9)
    con = duckdb.connect(str(warehouse_dir / "tooleval.duckdb"), read_only=True)
    try:
        assert figures(con, batched.run_id) == figures(con, calls.run_id)
        compared = con.execute("""
            select a.arm, a.seed, a.request_id, a.sent_as, b.sent_as, a.batch_id is null, b.batch_id is not null,
                   a.cost_usd, b.cost_usd,
                   (a.chosen, a.outcome, a.arguments, a.input_tokens, a.output_tokens, a.served_model_id,
                    a.arguments_correct) = (b.chosen, b.outcome, b.arguments, b.input_tokens, b.output_tokens,
                    b.served_model_id, b.arguments_correct)
            from selection_rows a join selection_rows b using (arm, seed, request_id)
            where a.run_id = ? and b.run_id = ?""", [calls.run_id, batched.run_id]).fetchall()
    finally:
        con.close()
    assert len(compared) == n
    for arm, seed, request, sent_a, sent_b, no_batch, has_batch, cost_a, cost_b, same in compared:
        assert (sent_a, sent_b, no_batch, has_batch, same) == ("call", "batch", True, True, True), (arm, seed, request)
        assert cost_a > 0 and cost_b == pytest.approx(cost_a / 2, rel=1e-9)
    # the next forecast times a batch by these batches' waits (a batch's wait: its longest row's), per model
    from statistics import median

    from tasks.run.prepare_run import prepare_run
    from tasks.selection.cost_forecast import forecast_run

    con = duckdb.connect(str(warehouse_dir / "tooleval.duckdb"), read_only=True)
    try:
        waits = dict(con.execute("""select arm, list(wait) from (select arm, max(latency_ms) / 1000 as wait
                                    from selection_rows where run_id = ? group by arm, batch_id) group by arm""",
                                 [batched.run_id]).fetchall())
    finally:
        con.close()
    for arm in forecast_run(prepare_run(path, checked=False), warehouse_dir).arms:
        assert arm.time is not None and arm.time.past.batches == len(waits[arm.arm]) == len(SEEDS)
        assert arm.time.past.batch_wait_s == pytest.approx(median(waits[arm.arm]))
        assert arm.time.past.call_rows == n // 2  # the synchronous run's rows of the arm's model


def journal_ids(path: Path) -> list[str | None]:
    if not path.is_file():
        return []
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [row[0] for row in con.execute("select batch_id from batch_chunks")]
    except sqlite3.OperationalError:  # the tables are being made
        return []
    finally:
        con.close()


def test_a_run_killed_while_waiting_on_its_batches_is_picked_up_by_the_rerun(support_copy, tmp_path):
    expected = trimmed_support(support_copy)
    arguments = {t.name: example_arguments(t.parameters) for t in support_tools()}
    with BatchServer(oracle(expected, arguments), api_key=FAKE_KEY, polls_to_end=2) as server:
        path = experiment(support_copy, server, "killed", poll_s=0.2, batch="batch: true\n")
        warehouse = tmp_path / "wh"
        journal = warehouse / "cache" / "batch_journal.sqlite"
        env = cli_env(migrated_home(tmp_path / "prefect-home"), OPENAI_API_KEY=FAKE_KEY, ANTHROPIC_API_KEY=FAKE_KEY)
        argv = [sys.executable, "-m", "flows.launch", "run", str(path), "--warehouse", str(warehouse)]
        server.hold_batches.set()  # the batches run no line until the first process is gone
        first = subprocess.Popen(argv, cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        units = 2 * len(SEEDS)
        waiting = min(units, MAX_WORKERS)  # each unit waits on its batch in one of the flow's workers
        deadline = time.monotonic() + 300
        while not ((ids := journal_ids(journal)) and len(ids) == waiting and all(ids)):
            assert first.poll() is None, first.stderr.read()[-3000:]
            assert time.monotonic() < deadline, f"the batches were not all submitted: {ids}"
            time.sleep(0.1)
        descendants = psutil.Process(first.pid).children(recursive=True)
        os.kill(first.pid, signal.SIGKILL)  # waiting on its batches, each id journaled
        first.wait(timeout=30)
        for child in descendants:  # a Prefect server of its own, if it started one
            if child.is_running():
                child.kill()
        assert first.returncode == -9
        before = set(server.batches)
        assert len(before) == waiting and set(server.submissions.values()) == {1}

        server.hold_batches.clear()
        rerun = subprocess.run(argv, cwd=ROOT, env=env, text=True, capture_output=True, timeout=900)
        assert rerun.returncode == 0, rerun.stderr[-3000:]
        created = set(server.batches)
        assert before < created and len(created) == units  # the killed run's batches picked up, the rest sent
        assert sum(server.submissions.values()) == units * len(expected)
        assert set(server.submissions.values()) == {1}  # 0 requests submitted twice
        assert len(server.requests()) == units * len(expected)  # every line ran once, no call was made
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        runs = con.execute("select run_id from runs").fetchall()
        rows = con.execute("""select arm, seed, request_id, count(*), min(sent_as), max(batch_id), bool_and(correct)
                              from selection_rows group by all""").fetchall()
    finally:
        con.close()
    assert len(runs) == 1  # the killed run landed nothing
    assert len(rows) == units * len(expected)
    assert all(count == 1 and sent == "batch" and batch in created and right
               for _, _, _, count, sent, batch, right in rows)


def test_tooleval_run_batch_stopped_by_sigterm_cancels_its_batches_at_the_provider(support_copy, tmp_path):
    expected = trimmed_support(support_copy)
    with BatchServer(oracle(expected), api_key=FAKE_KEY) as server:
        path = experiment(support_copy, server, "stopped", poll_s=30.0)
        env = cli_env(migrated_home(tmp_path / "prefect-home"), OPENAI_API_KEY=FAKE_KEY, ANTHROPIC_API_KEY=FAKE_KEY)
        server.hold_batches.set()
        run = subprocess.Popen([sys.executable, "-m", "flows.launch", "run", str(path), "--batch", "--warehouse",
                                str(tmp_path / "wh")], cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        deadline = time.monotonic() + 300
        while len(server.batches) < MAX_WORKERS:
            assert run.poll() is None, run.stderr.read()[-3000:]
            assert time.monotonic() < deadline, "the batches were not submitted"
            time.sleep(0.1)
        time.sleep(0.5)  # every unit asleep between its polls (30 s)
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
        assert run.returncode == 143, err[-3000:]
        batches = list(server.batches.values())
        assert len(batches) == MAX_WORKERS and all(batch.cancel_requested for batch in batches), err[-3000:]
        assert not server.requests()  # no line ran, nothing was sent as a call
