"""The Dask runner is an optional extra, imported only when chosen: without it, choosing it is an input error
that says what to install (exit 2 from the CLI), not an ImportError from deep inside Prefect."""

from __future__ import annotations

import sys

import pytest

from flows.task_runners import task_runner_for
from tasks.files.input_errors import InputError


def test_the_dask_runner_without_its_extra_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "prefect_dask", None)  # its import raises ImportError, as when not installed
    with pytest.raises(InputError) as raised:
        task_runner_for("dask")
    assert "pip install -e '.[dask]'" in str(raised.value) and "--task-runner" in str(raised.value)


def test_the_thread_runner_does_not_import_dask(monkeypatch):
    for module in ("prefect_dask", "dask", "distributed"):
        monkeypatch.setitem(sys.modules, module, None)
    assert type(task_runner_for("thread")).__name__ == "ThreadPoolTaskRunner"


def test_a_top_level_evaluate_runs_without_the_flow_heartbeat_and_a_subflow_keeps_it(prefect_harness):
    """The heartbeat thread sleeps in one-second steps and is joined when its flow ends: a top-level run
    (``tooleval run``) starts none; a deployment's subflow keeps the parent's settings."""
    from prefect import flow
    from prefect.settings import get_current_settings

    from flows.task_runners import _without_heartbeat

    @flow
    def heartbeat_of(label: str) -> int | None:
        return get_current_settings().flows.heartbeat_frequency

    @flow
    def parent() -> int | None:
        return _without_heartbeat(heartbeat_of, label="subflow")

    outside = get_current_settings().flows.heartbeat_frequency
    assert outside is not None  # Prefect's default: a heartbeat every few minutes
    assert _without_heartbeat(heartbeat_of, label="top level") is None
    assert parent() == outside
    assert get_current_settings().flows.heartbeat_frequency == outside  # put back after the run
