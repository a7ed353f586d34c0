"""The Dask and Ray runners are optional extras, imported only when chosen: without them, choosing one is an
input error that says what to install (exit 2 from the CLI), not an ImportError from deep inside Prefect."""

from __future__ import annotations

import sys

import pytest

from flows.task_runners import task_runner_for
from tasks.files.input_errors import InputError


@pytest.mark.parametrize(("runner", "module", "install"), [
    ("dask", "prefect_dask", "pip install -e '.[dask]'"),
    ("ray", "prefect_ray", "pip install prefect-ray"),
])
def test_a_runner_whose_extra_is_missing_says_what_to_install(monkeypatch, runner, module, install):
    monkeypatch.setitem(sys.modules, module, None)  # import of it raises ImportError, as when not installed
    with pytest.raises(InputError) as raised:
        task_runner_for(runner)
    assert install in str(raised.value) and "--task-runner" in str(raised.value)


def test_the_thread_runner_imports_neither_dask_nor_ray(monkeypatch):
    for module in ("prefect_dask", "prefect_ray", "dask", "distributed"):
        monkeypatch.setitem(sys.modules, module, None)
    assert type(task_runner_for("thread")).__name__ == "ThreadPoolTaskRunner"
