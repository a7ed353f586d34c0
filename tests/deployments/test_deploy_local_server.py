"""A real local Prefect server on loopback, with both deployments of deployments/prefect.yaml deployed to it
once for the module; a process worker per test runs a triggered flow run.

- The manual pre-change deployment, triggered with parameters, finds its rows in the warehouse: meanwhile an
  analyst's read-only DuckDB session in another process holds the warehouse file; the flow run's
  registration says it waits, the session closes, and the flow run still completes with every row registered.
- A pre-change run that fails its gates ends Failed with the verdict line as its message, and its log, read
  back through the API, holds no ERROR record and no traceback (its engine used to log ~40 lines ending in
  `flows.run_outcome.RunFailed`, "Engine execution exited with unexpected exception").

Every process the module starts is stopped (bounded waits, then SIGKILL) and checked gone.
Slow: ~1-3 minutes."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import duckdb
import httpx
import psutil
import pytest

from tests.drill.harness import WAITING, Holder
from tests.factories import ROOT
from tests.factories.ports import free_port
from tests.factories.prefect_api import migrated_home
from tests.factories.taskset import write_support_experiment
from tests.flows.test_pre_change_outcome import FAILED, bm25_ladder
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
            return [child.pid for child in psutil.Process(process.pid).children(recursive=True)]
        except psutil.Error:  # the process already gone
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
        time.sleep(0.25)
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


@dataclass
class Deployed:
    """A local server with both deployments: its API and the environment of the processes that use it."""

    api: str
    env: dict[str, str]


@contextlib.contextmanager
def deployed_server(workdir: Path, prefect_home: Path | None = None) -> Iterator[Deployed]:
    """``serve_and_deploy`` on a free port, its Prefect home ``prefect_home`` (else a new one in ``workdir``);
    the server is stopped at the end and checked gone."""
    port = free_port()
    env = deployment_env(prefect_home or workdir / "prefect-home", port)
    processes = Processes(workdir)
    try:
        serve_and_deploy(processes, env, port)
        yield Deployed(f"http://127.0.0.1:{port}/api", env)
    finally:
        processes.stop_all()
    assert processes.alive() == []


@pytest.fixture(scope="module")
def deployed(tmp_path_factory) -> Iterator[Deployed]:
    """The module's one deployed server, on a migrated Prefect home (tests/factories/prefect_api.py)."""
    work = tmp_path_factory.mktemp("deployed")
    with deployed_server(work, migrated_home(work / "prefect-home")) as server:
        yield server


def trigger(env: dict[str, str], experiment: Path, warehouse: Path) -> str:
    """A flow run of the pre-change deployment with these parameters, as the docs trigger it: its id."""
    out = prefect_cli(["deployment", "run", "pre-change/pre-change", "--param", f"experiment_path={experiment}",
                       "--param", f"warehouse_dir={warehouse}"], env, 120)
    return re.search(r"UUID: ([0-9a-f-]{36})", out)[1]


def flow_run_processes(worker: subprocess.Popen, flow_run_id: str) -> list[psutil.Process]:
    """The processes of ``worker`` running the flow run ``flow_run_id`` (Prefect names it in their environment)."""
    found = []
    for process in psutil.Process(worker.pid).children(recursive=True):
        try:
            if process.environ().get("PREFECT__FLOW_RUN_ID") == flow_run_id:
                found.append(process)
        except psutil.Error:  # ended meanwhile
            pass
    return found


def deployment_env(prefect_home: Path, port: int) -> dict[str, str]:
    """The environment of a local server, a deploy and a worker on ``port``: none of this process's Prefect or
    tooleval settings, the Prefect home ``prefect_home``, no scheduled runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "TOOLEVAL_"))}
    env.update({
        "PREFECT_HOME": str(prefect_home), "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", "PREFECT_UI_ENABLED": "false",
        "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",  # no weekly runs scheduled during the test
        "PREFECT_WORKER_QUERY_SECONDS": "1", "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
        "PREFECT_LOGGING_LEVEL": "INFO",
    })
    return env


def test_manual_deployment_runs_on_a_process_worker_against_a_local_server(deployed, support_copy, tmp_path):
    api = deployed.api
    env = {**deployed.env, "PREFECT_LOGGING_TO_API_ENABLED": "false",
           "TOOLEVAL_LOCK_WAIT_S": "900"}  # the registration waits for the analyst's session (below)
    arms = [{"name": "base-18", "catalogue": "base"}, {"name": "giftcards-30", "catalogue": "giftcards"}]
    experiment = write_support_experiment(support_copy, "pre-change-check", arms, "pre_change.yaml")
    warehouse = tmp_path / "warehouse"
    connect(warehouse / "tooleval.duckdb").close()  # an existing warehouse, which an analyst has open
    processes = Processes(tmp_path)
    analyst = Holder(warehouse / "tooleval.duckdb", read_only=True)
    try:
        weekly = httpx.get(f"{api}/deployments/name/weekly/weekly-support", timeout=10).json()
        assert [s["schedule"]["cron"] for s in weekly["schedules"]] == ["0 6 * * 1"]
        assert weekly["work_pool_name"] == "tooleval-process"
        assert weekly["parameters"]["experiment"] == "tasksets/support/experiments/production.yaml"

        flow_run_id = trigger(env, experiment, warehouse)
        processes.start("worker", [PREFECT, "worker", "start", "--pool", "tooleval-process", "--type", "process"], env)
        # the flow run lands every row, then waits for the file the analyst holds, and says so
        worker_log = tmp_path / "worker.log"
        wait_until(lambda: WAITING in worker_log.read_text(errors="replace"), 600,
                   "the flow run saying it waits for the file", lambda: processes.log("worker"))
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


def run_failed_deployment(tmp_path: Path, deployed: Deployed | None = None) -> tuple[dict, list[dict], list[int], str]:
    """Trigger the pre-change deployment on the BM25 ladder (it fails 4 gates) on ``deployed`` (else on a server
    deployed for it), let a process worker run it: the run's final state, its log as the API gives it once the
    run's process has ended (what it logged after its state included), the processes left alive, the worker's
    output."""
    if deployed is None:
        with deployed_server(tmp_path) as server:
            return run_failed_deployment(tmp_path, server)
    env = {**deployed.env, "PREFECT_LOGGING_TO_API_ENABLED": "true"}  # the log is read back from the API
    experiment = bm25_ladder(tmp_path / "bm25")
    processes = Processes(tmp_path)
    try:
        flow_run_id = trigger(env, experiment, tmp_path / "warehouse")
        worker = processes.start("worker", [PREFECT, "worker", "start", "--pool", "tooleval-process", "--type",
                                            "process"], env)

        def finished() -> dict | None:
            state = httpx.get(f"{deployed.api}/flow_runs/{flow_run_id}", timeout=10).json()["state"]
            return state if state["type"] in TERMINAL else None

        running = wait_until(lambda: flow_run_processes(worker, flow_run_id), 900, "the flow run's process",
                             lambda: processes.log("worker"))
        state = wait_until(finished, 900, "the triggered flow run finishing", lambda: processes.log("worker"))
        # the run's process sends what it still queues (what its engine logs after the state) before it ends
        _, left = psutil.wait_procs(running, timeout=120)
        assert not left, f"the flow run's process {left} has not ended\n{processes.log('worker')}"

        def run_log() -> list[dict]:
            return httpx.post(f"{deployed.api}/logs/filter", timeout=10, json={
                "logs": {"flow_run_id": {"any_": [flow_run_id]}}, "sort": "TIMESTAMP_ASC", "limit": 200}).json()

        wait_until(lambda: any("Finished in state" in r["message"] for r in run_log()), 120,
                   "the run's last state in its log", lambda: processes.log("worker"))
        logs = run_log()
    finally:
        processes.stop_all()
    return state, logs, processes.alive(), processes.log("worker")


def test_a_failed_pre_change_run_on_a_worker_logs_no_error_and_no_traceback(deployed, tmp_path):
    state, logs, alive, worker = run_failed_deployment(tmp_path, deployed)
    assert state["type"] == "FAILED", worker
    assert state["message"].startswith("FAIL — 4 of 7 gates failed") and FAILED[0] in state["message"]
    errors = [(r["level"], r["message"][:300]) for r in logs if r["level"] >= 40]
    assert errors == [], errors
    assert not any("Traceback" in r["message"] or "RunFailed" in r["message"] for r in logs)
    assert any(r["level"] == 30 and "FAIL — 4 of 7 gates failed" in r["message"] for r in logs)
    assert alive == []
