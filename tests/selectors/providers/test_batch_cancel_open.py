"""Cancelling an experiment's open batches from its journal, against the loopback Files/Batches server:
a run that submitted without waiting leaves its batches running; the cancel reaches exactly those of the
named experiment, and a batch that has ended is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.selectors.providers.batch.cancel_open import cancel_open_batches
from tasks.selectors.providers.batch.journal import BatchJournal
from tests.batch_child import items
from tests.batch_server import BatchServer
from tests.selectors.providers.conftest import FAKE_KEY
from tests.selectors.providers.test_batch_transport import PROVIDERS, send


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_experiments_open_batches_are_cancelled_at_the_provider(provider: str, tmp_path: Path) -> None:
    path = tmp_path / "batch_journal.sqlite"
    with BatchServer(api_key=FAKE_KEY, polls_to_end=5) as server:
        with BatchJournal(path) as journal:
            send(provider, server, journal, items(provider, 3, run_id="exp"), block=False)
            send(provider, server, journal, items(provider, 2, run_id="other"), block=False)
            send(provider, server, journal, items(provider, 1, run_id="exp-ended"))  # waits until it ended
        assert len(server.batches) == 3 and not any(b.cancel_requested for b in server.batches.values())

        assert cancel_open_batches(path, "exp", key_for=lambda _: FAKE_KEY) == (1, 0)
        [batch] = [b for b in server.batches.values() if b.cancel_requested]
        assert {cid for cid, _ in batch.lines} == {i.custom_id for i in items(provider, 3, run_id="exp")}
        assert cancel_open_batches(path, "nothing-sent", key_for=lambda _: FAKE_KEY) == (0, 0)
        assert cancel_open_batches(path, "exp-ended", key_for=lambda _: FAKE_KEY) == (0, 0)
        assert cancel_open_batches(path, "other", key_for=lambda _: "wrong key") == (0, 1)  # 401: counted
    assert cancel_open_batches(tmp_path / "absent.sqlite", "exp") == (0, 0)
