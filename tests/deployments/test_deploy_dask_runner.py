"""Beyond one machine: the evaluate flow's work units on a local Dask cluster of worker processes give the
same rows as the default thread runner, for both instruments, on one cluster. Slow (a Dask cluster starts)."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest

from flows.task_runners import evaluate_on, runner_name
from tasks.files.input_errors import InputError
from tests.factories.taskset import write_support_experiment

pytestmark = pytest.mark.slow
VOLATILE = ("run_id", "latency_ms", "cache_hit")
"""Columns that differ between two runs of the same work by design."""


def rows_of(warehouse: Path, run_id: str, table: str = "selection_rows", volatile: tuple[str, ...] = VOLATILE,
            order: str = "arm, seed, request_id") -> list[tuple]:
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        return con.execute(f"SELECT * EXCLUDE ({', '.join(volatile)}) FROM {table} WHERE run_id = ? ORDER BY {order}",
                           [run_id]).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def dask_cluster():
    """A local Dask cluster of two worker processes for the module's tests, chosen by the one setting
    (TOOLEVAL_TASK_RUNNER=dask)."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("TOOLEVAL_TASK_RUNNER", "dask")
            patch.setenv("TOOLEVAL_DASK_ADDRESS", cluster.scheduler_address)
            yield client
    finally:
        client.close()
        cluster.close()


def executed(client) -> int:
    """How many tasks the cluster's workers have run so far."""
    return sum(client.run(lambda dask_worker: dask_worker.state.executed_count).values())


def test_dask_worker_processes_give_the_same_rows_as_threads(prefect_harness, support_copy, tmp_path, dask_cluster):
    arms = [{"name": "giftcards-30", "catalogue": "giftcards"}]
    experiment = str(write_support_experiment(support_copy, "scale-out", arms, "scale.yaml"))
    threads = evaluate_on("thread")(experiment_path=experiment, warehouse_dir=str(tmp_path / "threads"),
                                    use_cache=False)
    dask = evaluate_on()(experiment_path=experiment, warehouse_dir=str(tmp_path / "dask"), use_cache=False)
    ran_on_workers = dask_cluster.run(lambda: "tasks.selection.select_batch" in sys.modules)

    assert len(ran_on_workers) == 2 and any(ran_on_workers.values())  # selection ran in the worker processes
    assert dask.n_rows == threads.n_rows == 3 * 540 and dask.n_units == threads.n_units == 3 * 2
    assert rows_of(tmp_path / "dask", dask.run_id) == rows_of(tmp_path / "threads", threads.run_id)


def test_the_runner_setting_is_checked():
    assert runner_name("Dask") == "dask" and runner_name(None) in ("thread", "dask")
    for unknown in ("spark", "ray"):  # ray: never run or tested, so refused rather than offered
        with pytest.raises(InputError) as caught:
            runner_name(unknown)
        assert caught.value.problems[0].rule == "task-runner"


def test_task_runs_on_dask_workers_give_the_same_rows_as_threads(prefect_harness, tmp_path, dask_cluster):
    from tests.surface.tiny_desk import write_desk

    experiment = str(write_desk(tmp_path) / "experiments" / "four.yaml")
    threads = evaluate_on("thread")(experiment_path=experiment, warehouse_dir=str(tmp_path / "threads"),
                                    use_cache=False)
    before = executed(dask_cluster)  # the cluster is the module's: count this test's tasks
    dask = evaluate_on()(experiment_path=experiment, warehouse_dir=str(tmp_path / "dask"), use_cache=False)
    ran_on_workers = dask_cluster.run(lambda: "tasks.surface.run_unit" in sys.modules)

    assert any(ran_on_workers.values()) and executed(dask_cluster) > before  # the tasks ran in the worker processes
    assert dask.n_rows == threads.n_rows == 4 * 3 * 4
    volatile = ("run_id", "wall_ms", "agent_ms", "cache_hit")
    assert rows_of(tmp_path / "dask", dask.run_id, "task_runs", volatile, "arm, seed, task_id") == \
        rows_of(tmp_path / "threads", threads.run_id, "task_runs", volatile, "arm, seed, task_id")
