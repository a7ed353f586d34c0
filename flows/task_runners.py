"""Where the work units run: one setting, ``thread`` (default) or ``dask``.

Given as ``--task-runner`` (CLI), the ``task_runner`` parameter (pre-change and weekly flows, hence the
deployments), or the environment variable ``TOOLEVAL_TASK_RUNNER``; applied with
``evaluate.with_options(task_runner=...)``, so the evaluate flow itself never changes.

- ``thread``: Prefect's ThreadPoolTaskRunner, bounded at ``flows.evaluate.MAX_WORKERS`` threads;
- ``dask``: prefect-dask on a Dask cluster (the ``dask`` extra, ``pip install -e '.[dask]'``; ``make install``
  installs it; imported only when chosen): the scheduler at ``TOOLEVAL_DASK_ADDRESS`` (e.g.
  ``tcp://scheduler:8786``), else a local cluster of ``TOOLEVAL_DASK_WORKERS`` worker processes (2) with
  ``TOOLEVAL_DASK_THREADS`` threads each (1).
``ray`` is refused with a message: prefect-ray is not a dependency.

Dask workers are other processes and report their task runs to the flow's Prefect API, so the API
must be a server they can reach. Deployments always have one; ``tooleval run`` (flows/api.py) starts one
temporary local server for the run when ``PREFECT_API_URL`` is unset and hands its URL to the workers.

Workers land rows as Parquet partitions themselves (atomic, one file per work unit) and share the
selection cache (SQLite, WAL); the flow registers the run once all units are done, so no step assumes a
single writing process.
"""

from __future__ import annotations

import functools
import os
from typing import Any, Callable

from tasks.files.input_errors import InputError

ENV_VAR = "TOOLEVAL_TASK_RUNNER"
RUNNERS = ("thread", "dask")


def runner_name(name: str | None = None) -> str:
    chosen = (name or os.environ.get(ENV_VAR) or "thread").strip().lower()
    if chosen not in RUNNERS:
        unsupported = ": a Ray runner is not supported (never run or tested here)" if chosen == "ray" else ""
        raise InputError.one(ENV_VAR if not name else "--task-runner", chosen, "task-runner",
                             f"one of {', '.join(RUNNERS)}{unsupported}")
    return chosen


def task_runner_for(name: str | None = None) -> Any:
    """A fresh task runner for ``evaluate.with_options(task_runner=...)``."""
    chosen = runner_name(name)
    setting = "--task-runner" if name else ENV_VAR
    if chosen == "thread":
        from prefect.task_runners import ThreadPoolTaskRunner

        from flows.evaluate import MAX_WORKERS

        return ThreadPoolTaskRunner(max_workers=MAX_WORKERS)
    if chosen == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError:
            raise InputError.one(setting, "dask", "task-runner-installed",
                                 "the Dask runner needs the dask extra (prefect-dask): pip install -e '.[dask]' "
                                 "(make install installs it)") from None

        if address := os.environ.get("TOOLEVAL_DASK_ADDRESS"):
            return DaskTaskRunner(address=address)
        return DaskTaskRunner(cluster_kwargs={
            "n_workers": int(os.environ.get("TOOLEVAL_DASK_WORKERS", "2")),
            "threads_per_worker": int(os.environ.get("TOOLEVAL_DASK_THREADS", "1")),
            "processes": True,
            "dashboard_address": None,
        })


def evaluate_on(name: str | None = None) -> Callable[..., Any]:
    """The evaluate flow with the chosen task runner, called with the flow's parameters."""
    from flows.evaluate import evaluate  # Prefect: imported only to run

    chosen = evaluate if runner_name(name) == "thread" else evaluate.with_options(task_runner=task_runner_for(name))
    return functools.partial(_without_heartbeat, chosen)


def _without_heartbeat(flow: Any, **parameters: Any) -> Any:
    """Run the flow; when it is the top-level flow (``tooleval run``, the API), without Prefect's flow-run
    heartbeat (a thread joined when the flow ends, which serves a server watching deployments' runs). A
    subflow (a deployment's flow calling this one) keeps its settings."""
    from prefect.context import FlowRunContext, SettingsContext, get_settings_context

    if FlowRunContext.get() is not None:
        return flow(**parameters)
    current = get_settings_context()
    settings = current.settings.model_copy(  # a copy without validation, unlike temporary_settings
        update={"flows": current.settings.flows.model_copy(update={"heartbeat_frequency": None})})
    with SettingsContext(profile=current.profile, settings=settings):
        return flow(**parameters)
