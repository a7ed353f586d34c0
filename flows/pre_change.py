"""The pre-change flow: run one experiment file before a catalogue change (the manual deployment).

The evaluate flow as a subflow, with the task runner chosen by a parameter (``thread``, ``dask``, ``ray``).
"""

from __future__ import annotations

from prefect import flow

from flows.evaluate import RunSummary
from flows.task_runners import evaluate_on


@flow(name="pre-change", log_prints=False)
def pre_change(experiment_path: str, warehouse_dir: str | None = None, allow_provisional: bool = False,
               use_cache: bool = True, task_runner: str | None = None, max_calls: int | None = None,
               max_spend_usd: float | None = None) -> RunSummary:
    """Evaluate ``experiment_path`` (relative to the checkout) and register its rows in the warehouse."""
    return evaluate_on(task_runner)(experiment_path=experiment_path, warehouse_dir=warehouse_dir,
                                    use_cache=use_cache, allow_provisional=allow_provisional,
                                    max_calls=max_calls, max_spend_usd=max_spend_usd)
