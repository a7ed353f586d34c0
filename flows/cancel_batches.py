"""``tooleval run EXPERIMENT --cancel-batches``: cancel at the provider the batches the experiment's runs
left running (a detached run's, or a killed run's), read from the warehouse's batch journal. It runs nothing
and starts no Prefect server."""

from __future__ import annotations

import argparse

from flows.exit_codes import EXIT_OK


def cancelled_line(cancelled: int, failed: int) -> str:
    """What the command prints (within 80 columns)."""
    line = f"{cancelled} batch{'es' if cancelled != 1 else ''} cancelled at the provider"
    if failed:
        line += f"; {failed} could not be (ended, or refused)"
    return line


def cmd_cancel_batches(args: argparse.Namespace) -> int:
    from tasks.experiment.resolve_experiment import load_experiment_file
    from tasks.selectors.providers.batch.cancel_open import cancel_open_batches
    from tasks.selectors.providers.batch_selection import JOURNAL_FILE
    from warehouse.location import warehouse_at

    name = load_experiment_file(args.experiment).name
    journal = warehouse_at(args.warehouse).cache_path.parent / JOURNAL_FILE
    print(cancelled_line(*cancel_open_batches(journal, name)))
    return EXIT_OK
