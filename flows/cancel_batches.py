"""Cancelling at the provider the batches an experiment's runs left running, read from the warehouse's
batch journal: by ``tooleval run EXPERIMENT --cancel-batches`` (a detached run's, or a killed run's; it runs
nothing and starts no Prefect server) and by the Prefect state hook of a deployment flow run that is
cancelled or crashes (a worker keeps Prefect's own signal handling, so ``tooleval run``'s stop does not apply).

The hook may run in the flow run's own process (the engine handling the cancel: its waiting units are told to
cancel, as a stopped ``tooleval run``'s are) or in the worker's runner process after it ended the flow run's
process: either way the experiment's batches the journal holds as not ended are cancelled, found from the
flow run's parameters."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

from flows.exit_codes import EXIT_OK


def cancelled_line(cancelled: int, failed: int) -> str:
    """What the command prints (within 80 columns)."""
    line = f"{cancelled} batch{'es' if cancelled != 1 else ''} cancelled at the provider"
    if failed:
        line += f"; {failed} could not be (ended, or refused)"
    return line


def cancel_open(warehouse_dir: str | Path | None, name: str) -> tuple[int, int]:
    """Cancel the batches of experiment ``name`` that the journal beside the warehouse holds as not ended:
    (cancelled, could not be)."""
    from tasks.selectors.providers.batch.cancel_open import cancel_open_batches
    from tasks.selectors.providers.batch_selection import JOURNAL_FILE
    from warehouse.location import warehouse_at

    return cancel_open_batches(warehouse_at(warehouse_dir).cache_path.parent / JOURNAL_FILE, name)


def cmd_cancel_batches(args: argparse.Namespace) -> int:
    from tasks.experiment.resolve_experiment import load_experiment_file

    print(cancelled_line(*cancel_open(args.warehouse, load_experiment_file(args.experiment).name)))
    return EXIT_OK


def cancel_run_batches(experiment_name: Callable[[dict[str, Any]], str]) -> Callable[..., None]:
    """A flow state hook (``on_cancellation=`` / ``on_crashed=``) for a flow whose parameters name the
    experiment (``experiment_name`` reads its name from them) and ``warehouse_dir``."""

    def hook(flow: Any, flow_run: Any, state: Any) -> None:
        from prefect.logging import get_logger

        from flows.stop_on_signal import cancel_batches

        cancel_batches()  # units of this process waiting on a batch (none in the runner's process)
        parameters = dict(flow_run.parameters or {})
        counts = cancel_open(parameters.get("warehouse_dir"), experiment_name(parameters))
        get_logger("tooleval").info("flow run %s %s: %s", flow_run.name, state.name, cancelled_line(*counts))

    hook.__name__ = "cancel_run_batches"
    return hook


def named(path: str, suffix: str = "") -> str:
    """The name of the experiment file at ``path`` (and ``suffix``, as the weekly run's derived one has)."""
    from tasks.experiment.resolve_experiment import load_experiment_file

    return load_experiment_file(Path(path)).name + suffix
