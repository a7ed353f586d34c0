"""A real local Prefect server on loopback: deploy from deployments/prefect.yaml, trigger the manual
pre-change deployment with parameters, let a process worker run it, and find its rows in the warehouse.
Meanwhile an analyst's read-only DuckDB session in another process holds the warehouse file: the flow run's
registration says it waits, the session closes, and the flow run still completes with every row registered.
Every process the test starts is stopped in ``finally`` (bounded waits, then SIGKILL).
Slow: ~1-3 minutes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import httpx
import pytest

from tests.drill.harness import WAITING, Holder
from tests.factories import ROOT
from tests.factories.ports import free_port
from tests.factories.taskset import write_support_experiment
from warehouse.connect import connect

pytestmark = pytest.mark.slow
PREFECT = str(Path(sys.executable).parent / "prefect")
PREFECT_YAML = ROOT / "deployments" / "prefect.yaml"
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


class Processes:
    """Processes this test started, each in its own session, stopped by id (with their children)."""

    def __init__(self, logs: Path):
        self.logs = logs
        self.started: list[subprocess.Popen] = []

    def start(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "wb")
        process = subprocess.Popen(args, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        self.started.append(process)
        return process

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace")[-4000:] if path.is_file() else ""

    def _descendants(self, process: subprocess.Popen) -> list[int]:
        try:
            import psutil

            return [child.pid for child in psutil.Process(process.pid).children(recursive=True)]
        except Exception:  # psutil missing or the process already gone
            return []

    def stop_all(self, grace: float = 15.0) -> None:
        for process in reversed(self.started):
            if process.poll() is not None:
                continue
            children = self._descendants(process)
            for sig in (signal.SIGTERM, signal.SIGKILL):
                for pid in [process.pid] + children:
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
                try:
                    process.wait(timeout=grace if sig == signal.SIGTERM else 10)
                    break
                except subprocess.TimeoutExpired:
                    continue
            for pid in children:  # children that outlived their parent
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def alive(self) -> list[int]:
        return [p.pid for p in self.started if p.poll() is None]


def prefect_cli(args: list[str], env: dict[str, str], timeout: float) -> str:
    done = subprocess.run([PREFECT, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"prefect {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def wait_until(check, timeout: float, what: str, on_fail=lambda: ""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(1)
    pytest.fail(f"{what} within {timeout:.0f} s\n{on_fail()}")


def serve_and_deploy(processes: Processes, env: dict[str, str], port: int) -> None:
    """A local Prefect server on ``port``, answering; the process work pool; both deployments of
    deployments/prefect.yaml deployed to it."""
    api = f"http://127.0.0.1:{port}/api"
    server = processes.start("server", [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)], env)

    def healthy() -> bool:
        if server.poll() is not None:
            pytest.fail(f"the Prefect server exited:\n{processes.log('server')}")
        try:
            return httpx.get(f"{api}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(healthy, 180, "the local Prefect server answering /api/health", lambda: processes.log("server"))
    prefect_cli(["work-pool", "create", "tooleval-process", "--type", "process"], env, 120)
    prefect_cli(["--no-prompt", "deploy", "--all", "--prefect-file", str(PREFECT_YAML)], env, 300)


def deployment_env(tmp_path: Path, port: int, **settings: str) -> dict[str, str]:
    """The environment of a local server, a deploy and a worker on ``port``: none of this process's Prefect or
    tooleval settings, a Prefect home of the test's own, no scheduled runs, then ``settings``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "TOOLEVAL_"))}
    env.update({
        "PREFECT_HOME": str(tmp_path / "prefect-home"), "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", "PREFECT_UI_ENABLED": "false",
        "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",  # no weekly runs scheduled during the test
        "PREFECT_WORKER_QUERY_SECONDS": "1", "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
        "PREFECT_LOGGING_LEVEL": "INFO", **settings,
    })
    return env


def test_manual_deployment_runs_on_a_process_worker_against_a_local_server(support_copy, tmp_path):
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = deployment_env(tmp_path, port, PREFECT_LOGGING_TO_API_ENABLED="false",
                         TOOLEVAL_LOCK_WAIT_S="900")  # the registration waits for the analyst's session (below)
    arms = [{"name": "base-18", "catalogue": "base"}, {"name": "giftcards-30", "catalogue": "giftcards"}]
    experiment = write_support_experiment(support_copy, "pre-change-check", arms, "pre_change.yaml")
    warehouse = tmp_path / "warehouse"
    connect(warehouse / "tooleval.duckdb").close()  # an existing warehouse, which an analyst has open
    processes = Processes(tmp_path)
    analyst = Holder(warehouse / "tooleval.duckdb", read_only=True)
    try:
        serve_and_deploy(processes, env, port)

        weekly = httpx.get(f"{api}/deployments/name/weekly/weekly-support", timeout=10).json()
        assert [s["schedule"]["cron"] for s in weekly["schedules"]] == ["0 6 * * 1"]
        assert weekly["work_pool_name"] == "tooleval-process"
        assert weekly["parameters"]["experiment"] == "tasksets/support/experiments/production.yaml"

        out = prefect_cli(["deployment", "run", "pre-change/pre-change", "--param", f"experiment_path={experiment}",
                           "--param", f"warehouse_dir={warehouse}"], env, 120)
        flow_run_id = re.search(r"UUID: ([0-9a-f-]{36})", out)[1]
        processes.start("worker", [PREFECT, "worker", "start", "--pool", "tooleval-process", "--type", "process"], env)
        # the flow run lands every row, then waits for the file the analyst holds, and says so
        worker_log = tmp_path / "worker.log"
        wait_until(lambda: worker_log.is_file() and WAITING in worker_log.read_text(errors="replace"), 600, "the flow run saying it waits for the file",
                   lambda: processes.log("worker"))
        analyst.release()

        def finished() -> str | None:
            state = httpx.get(f"{api}/flow_runs/{flow_run_id}", timeout=10).json()["state"]["type"]
            return state if state in TERMINAL else None

        state = wait_until(finished, 420, "the triggered flow run finishing", lambda: processes.log("worker"))
        assert state == "COMPLETED", processes.log("worker")
        flow_run = httpx.get(f"{api}/flow_runs/{flow_run_id}", timeout=10).json()
        assert flow_run["parameters"]["experiment_path"] == str(experiment)
    finally:
        analyst.release()
        processes.stop_all()
    assert processes.alive() == []

    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        runs = con.execute("select run_id, experiment, n_rows from runs").fetchall()
        assert [(name, n) for _, name, n in runs] == [("pre-change-check", 2 * 3 * 540)]
        by_arm = dict(con.execute("select arm, count(*) from selection_rows group by arm").fetchall())
        assert by_arm == {"base-18": 3 * 540, "giftcards-30": 3 * 540}
    finally:
        con.close()
    assert (warehouse / "reports" / runs[0][0] / "report.md").is_file()
