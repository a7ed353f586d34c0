"""Cancel at the provider every batch an experiment's runs left running (a detached run's batches, or those
of a run killed while it waited): the operator's way to stop the bill without rerunning.

The journal's item labels start with the custom ids' run part (the experiment's name), so its chunks that
have a batch id and have not ended are the experiment's open batches. Each is cancelled through the same
SDK wire a run uses, with the provider's default key variable, and marked cancel-requested in the journal; a
rerun of the experiment then reads the cancelled batch's results as a run does (its unfinished requests are
sent again as calls). A chunk whose create never returned an id cannot be cancelled from here."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tasks.selectors.providers.batch.control import control
from tasks.selectors.providers.batch.journal import BatchJournal
from tasks.selectors.providers.chat_options import read_api_key


def default_key(provider: str) -> str:
    return read_api_key(provider, {}) or ""


def cancel_open_batches(journal_path: Path, run: str,
                        key_for: Callable[[str], str] = default_key) -> tuple[int, int]:
    """Cancel ``run``'s open batches at their providers (the journal's batches of items labelled ``run/...``
    that have an id and have not ended): (cancelled, failed)."""
    from tasks.selectors.providers.batch.run_batches import WIRES

    if not Path(journal_path).is_file():
        return 0, 0
    cancelled = failed = 0
    with BatchJournal(Path(journal_path)) as journal:
        for chunk_key, endpoint, batch_id in journal.open_chunks(run + "/"):
            provider, base_url = endpoint.split(" ", 1)
            try:
                wire = WIRES[provider](key_for(provider), base_url, {})
                control(lambda: wire.cancel(batch_id))
            except Exception:  # refused (already ended, wrong key) or unreachable: counted, not raised
                failed += 1
                continue
            journal.request_cancel(chunk_key)
            cancelled += 1
    return cancelled, failed
