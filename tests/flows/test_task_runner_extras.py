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
