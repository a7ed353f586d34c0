"""The temporary Prefect server's port cannot be taken by another process between being chosen and being
served (the parent binds it and hands the socket over), two servers started at once never share a port, and
a run whose server is killed after its rows were registered ends at once with exit 6, saying that its rows
are registered. Real processes: uvicorn servers, a second process trying the port, a killed server."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import urllib.request
from urllib.parse import urlsplit

import duckdb
import pytest

from flows.exit_codes import EXIT_CRASHED
from flows.prefect_server import LocalServer
from flows.prefect_settings import apply_prefect_defaults
from tests.drill.harness import drill_experiment
from tests.factories import ROOT
from tests.factories.prefect_api import migrated_home

pytestmark = pytest.mark.slow  # real Prefect servers: ~20-60 s

TRY_PORT = textwrap.dedent("""
    import socket, sys
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", int(sys.argv[1])))
    except OSError as error:
        print("refused", error.errno)
    else:
        print("bound")
""")


def test_a_servers_port_is_held_from_the_start_and_two_servers_never_share_one(tmp_path, monkeypatch):
    apply_prefect_defaults()
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect-home"))
    first, second = LocalServer().spawn(), LocalServer().spawn()  # started at once
    try:
        assert urlsplit(first.api_url).port != urlsplit(second.api_url).port
        for server in (first, second):  # another process cannot take the port, even before the server answers
            tried = subprocess.run([sys.executable, "-c", TRY_PORT, str(urlsplit(server.api_url).port)],
                                   capture_output=True, text=True, timeout=60)
            assert tried.stdout.startswith("refused"), tried.stdout + tried.stderr
        urls = {first.wait_ready(), second.wait_ready()}
        assert len(urls) == 2
        first.stop()  # each answers on its own port: stopping one leaves the other answering
        with urllib.request.urlopen(f"{second.api_url}/health", timeout=10) as response:
            assert response.status == 200
    finally:
        first.stop()
        second.stop()


KILL_AFTER_REGISTRATION = textwrap.dedent("""
    import sys, time
    import psutil
    import flows.evaluate as evaluate
    from flows.cli import main

    original = evaluate.reached

    def reached(point, detail=""):
        original(point, detail)
        if point == "registered":  # the rows are registered: now the Prefect API goes away
            for child in psutil.Process().children(recursive=True):
                if "uvicorn" in " ".join(child.cmdline()):
                    child.kill()
            print(f"KILLED {time.monotonic()}", file=sys.stderr, flush=True)
            time.sleep(120)  # the API watch ends the process long before this

    evaluate.reached = reached
    sys.exit(main(["run", sys.argv[1], "--warehouse", sys.argv[2]]))
""")


def test_a_run_that_loses_its_api_after_registering_ends_at_once_and_says_its_rows_are_registered(tmp_path):
    experiment = drill_experiment(tmp_path / "shop")
    warehouse = tmp_path / "wh"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PYTHONPATH=str(ROOT), PREFECT_HOME=str(migrated_home(tmp_path / "prefect-home")))
    done = subprocess.run([sys.executable, "-c", KILL_AFTER_REGISTRATION, str(experiment.path), str(warehouse)],
                          capture_output=True, text=True, timeout=900, cwd=ROOT, env=env)
    ended = time.monotonic()
    killed = float(next(line for line in done.stderr.splitlines() if line.startswith("KILLED")).split()[1])
    assert done.returncode == EXIT_CRASHED, done.stderr[-3000:]
    assert ended - killed < 30  # the watch polls every 0.5 s: seconds, not minutes of client retries
    assert "the temporary Prefect server exited" in done.stderr
    assert f"rows registered in {warehouse / 'tooleval.duckdb'}" in done.stderr
    assert "Those rows are registered for good" in done.stderr and "Traceback" not in done.stderr
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        (run_id, n_rows), = con.execute("select run_id, n_rows from runs").fetchall()
        assert con.execute("select count(*) from selection_rows").fetchall()[0][0] == n_rows == experiment.planned_rows
    finally:
        con.close()
    assert f"run {run_id}: {n_rows:,} rows registered" in done.stderr


def test_a_task_run_against_a_dead_api_says_the_api_was_never_up_not_lost_and_speaks_of_tasks(tmp_path):
    """A configured PREFECT_API_URL nobody serves: the run says the API refuses connections and how to fix it,
    not that it "stopped answering during the run", and nothing in its words is about selections only."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")},
           "PYTHONPATH": str(ROOT), "PREFECT_HOME": str(tmp_path / "prefect-home"), "COLUMNS": "200",
           "PREFECT_API_URL": "http://127.0.0.1:9/api"}
    done = subprocess.run([sys.executable, "-m", "flows.launch", "tasks", "run",
                           str(ROOT / "tasksets" / "support_tasks" / "experiments" / "four_arms.yaml"),
                           "--warehouse", str(tmp_path / "wh")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert done.returncode == EXIT_CRASHED, done.stderr[-3000:]
    assert "http://127.0.0.1:9/api refuses connections" in done.stderr and "unset PREFECT_API_URL" in done.stderr
    assert "during the run" not in done.stderr and "selections" not in done.stderr
    assert not (tmp_path / "wh" / "tooleval.duckdb").exists()


def test_a_server_still_starting_at_the_timeout_is_waited_for_not_taken_for_a_crash(tmp_path, monkeypatch, capsys):
    """Two runs started at once on a loaded machine: a server slower than the start-up timeout, alive and
    working, is waited for (with one line saying so) instead of ending the run with exit 6."""
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect-home"))
    apply_prefect_defaults()
    server = LocalServer(timeout_s=0.3)  # no server answers in 0.3 s: it is still importing
    try:
        server.spawn()
        assert server.wait_ready().startswith("http://127.0.0.1:")
    finally:
        server.stop()
    assert "has not answered in 0 s but is still starting" in capsys.readouterr().err
