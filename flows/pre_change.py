"""The pre-change flow: run one experiment file before a catalogue change (the manual deployment).

The evaluate flow as a subflow, with the task runner chosen by a parameter (``thread`` or ``dask``). The
flow run ends Failed or Completed by the run's exit code, its log states the verdict line, and the markdown
report and the per-gate table are artifacts (keys ``<taskset>-<experiment>-report`` / ``-gates``): see
flows/run_outcome.py. With ``batch_wait: detach`` a flow run whose batches still run at the provider schedules
a follow-up flow run of its deployment (flows/batch_follow_up.py) and ends Completed, naming it.
"""

from __future__ import annotations

from prefect import flow
from prefect.states import Completed

from flows.batch_follow_up import FOLLOW_UP_S, follow_up_message, schedule_follow_up
from flows.cancel_batches import cancel_run_batches, named
from flows.run_outcome import experiment_key, final_state, publish_run
from flows.task_runners import evaluate_on


CANCEL_BATCHES = cancel_run_batches(lambda parameters: named(parameters["experiment_path"]))
"""Cancelling a flow run cancels the batches it waits on (not a crash: a rerun picks those up)."""


@flow(name="pre-change", log_prints=False, persist_result=True, on_cancellation=[CANCEL_BATCHES])
def pre_change(experiment_path: str, warehouse_dir: str | None = None, allow_provisional: bool = False,
               use_cache: bool = True, task_runner: str | None = None, max_calls: int | None = None,
               max_spend_usd: float | None = None, batch: bool = False, batch_wait: str | None = None,
               follow_up_s: float = FOLLOW_UP_S):
    """Evaluate ``experiment_path`` (relative to the checkout), register its rows and judge its gates: Failed
    when a gate fails (the state's message is the verdict line), Completed when they pass. ``batch`` /
    ``batch_wait`` as ``tooleval run --batch`` / ``--batch-wait``."""
    summary = evaluate_on(task_runner)(experiment_path=experiment_path, warehouse_dir=warehouse_dir,
                                       use_cache=use_cache, allow_provisional=allow_provisional,
                                       max_calls=max_calls, max_spend_usd=max_spend_usd, batch=batch,
                                       batch_wait=batch_wait)
    result = publish_run(summary, f"pre-change-{experiment_key(experiment_path)}", "pre-change run")
    if summary.batches_pending and (follow_up := schedule_follow_up(follow_up_s)) is not None:
        return Completed(message=follow_up_message(result.verdict_line, follow_up), data=result)
    return final_state(result, result.verdict_line, result.exit_code)
