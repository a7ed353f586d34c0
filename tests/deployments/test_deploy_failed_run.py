"""A pre-change run that fails its gates, deployed from deployments/prefect.yaml and run by a real process
worker against a local Prefect server: the run ends Failed with the verdict line as its message, and its log,
read back through the API, holds no ERROR record and no traceback (its engine used to log ~40 lines ending
in `flows.run_outcome.RunFailed`, "Engine execution exited with unexpected exception")."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx

from tests.deployments.test_deploy_local_server import (PREFECT, TERMINAL, Processes, deployment_env, prefect_cli,
                                                        serve_and_deploy, wait_until)
from tests.factories.ports import free_port
from tests.flows.test_pre_change_outcome import FAILED, bm25_ladder


def run_failed_deployment(tmp_path: Path) -> tuple[dict, list[dict], list[int], str]:
    """Deploy, trigger the pre-change deployment on the BM25 ladder (it fails 4 gates), let a process worker run
    it: the run's final state, its log as the API gives it, the processes left alive, the worker's output."""
    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = deployment_env(tmp_path, port, PREFECT_LOGGING_TO_API_ENABLED="true")  # the log is read back from the API
    experiment = bm25_ladder(tmp_path / "bm25")
    processes = Processes(tmp_path)
    try:
        serve_and_deploy(processes, env, port)
        out = prefect_cli(["deployment", "run", "pre-change/pre-change", "--param", f"experiment_path={experiment}",
                           "--param", f"warehouse_dir={tmp_path / 'warehouse'}"], env, 120)
        flow_run_id = re.search(r"UUID: ([0-9a-f-]{36})", out)[1]
        processes.start("worker", [PREFECT, "worker", "start", "--pool", "tooleval-process", "--type", "process"], env)

        def finished() -> dict | None:
            state = httpx.get(f"{api}/flow_runs/{flow_run_id}", timeout=10).json()["state"]
            return state if state["type"] in TERMINAL else None

        state = wait_until(finished, 900, "the triggered flow run finishing", lambda: processes.log("worker"))

        def run_log() -> list[dict]:
            return httpx.post(f"{api}/logs/filter", timeout=10, json={
                "logs": {"flow_run_id": {"any_": [flow_run_id]}}, "sort": "TIMESTAMP_ASC", "limit": 200}).json()

        wait_until(lambda: any("Finished in state" in r["message"] for r in run_log()), 120,
                   "the run's last state in its log", lambda: processes.log("worker"))
        time.sleep(10)  # what the engine logs after the run's state (the traceback it logged) reaches the API
        logs = run_log()
    finally:
        processes.stop_all()
    return state, logs, processes.alive(), processes.log("worker")


def test_a_failed_pre_change_run_on_a_worker_logs_no_error_and_no_traceback(tmp_path):
    state, logs, alive, worker = run_failed_deployment(tmp_path)
    assert state["type"] == "FAILED", worker
    assert state["message"].startswith("FAIL — 4 of 7 gates failed") and FAILED[0] in state["message"]
    errors = [(r["level"], r["message"][:300]) for r in logs if r["level"] >= 40]
    assert errors == [], errors
    assert not any("Traceback" in r["message"] or "RunFailed" in r["message"] for r in logs)
    assert any(r["level"] == 30 and "FAIL — 4 of 7 gates failed" in r["message"] for r in logs)
    assert alive == []
