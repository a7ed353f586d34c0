"""Beyond one machine: the evaluate flow's selection tasks on a local Dask cluster of worker processes give
the same rows as the default thread runner. Slow (a Dask cluster starts): ~30 s."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest

from flows.evaluate import evaluate
from flows.task_runners import evaluate_on, runner_name
from tasks.files.input_errors import InputError
from tests.factories.taskset import write_support_experiment

pytestmark = pytest.mark.slow
VOLATILE = ("run_id", "latency_ms", "cache_hit")
"""Columns that differ between two runs of the same work by design."""


def rows_of(warehouse: Path, run_id: str) -> list[tuple]:
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        return con.execute(f"SELECT * EXCLUDE ({', '.join(VOLATILE)}) FROM selection_rows WHERE run_id = ? "
                           "ORDER BY arm, seed, request_id", [run_id]).fetchall()
    finally:
        con.close()


def test_dask_worker_processes_give_the_same_rows_as_threads(prefect_harness, support_copy, tmp_path, monkeypatch):
    from distributed import Client, LocalCluster

    arms = [{"name": "giftcards-30", "catalogue": "giftcards"}]
    experiment = str(write_support_experiment(support_copy, "scale-out", arms, "scale.yaml"))
    threads = evaluate(experiment_path=experiment, warehouse_dir=str(tmp_path / "threads"), use_cache=False)

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    try:
        monkeypatch.setenv("TOOLEVAL_TASK_RUNNER", "dask")
        monkeypatch.setenv("TOOLEVAL_DASK_ADDRESS", cluster.scheduler_address)
        on_dask = evaluate_on()  # the one setting: TOOLEVAL_TASK_RUNNER=dask
        dask = on_dask(experiment_path=experiment, warehouse_dir=str(tmp_path / "dask"), use_cache=False)
        ran_on_workers = client.run(lambda: "tasks.run.select_batch" in sys.modules)
    finally:
        client.close()
        cluster.close()

    assert len(ran_on_workers) == 2 and any(ran_on_workers.values())  # selection ran in the worker processes
    assert dask.n_rows == threads.n_rows == 3 * 540 and dask.n_units == threads.n_units == 3 * 2
    assert rows_of(tmp_path / "dask", dask.run_id) == rows_of(tmp_path / "threads", threads.run_id)


def test_the_runner_setting_is_checked():
    assert runner_name("Dask") == "dask" and runner_name(None) in ("thread", "dask", "ray")
    with pytest.raises(InputError) as caught:
        runner_name("spark")
    assert caught.value.problems[0].rule == "task-runner"
