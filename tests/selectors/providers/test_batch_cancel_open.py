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


def slow_batches(support: Path, monkeypatch: pytest.MonkeyPatch) -> BatchServer:
    """A loopback batch server answering the trimmed support task set, whose batches run for 20 polls;
    the providers' key variables set to its key."""
    from tests.factories.catalogues import support_tools
    from tests.provider_server import oracle
    from tests.selectors.providers.example_arguments import example_arguments
    from tests.selectors.providers.test_provider_flow import trimmed_support

    expected = trimmed_support(support)
    arguments = {t.name: example_arguments(t.parameters) for t in support_tools()}
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    return BatchServer(oracle(expected, arguments), api_key=FAKE_KEY, polls_to_end=20)


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


@pytest.mark.slow  # a Prefect run
def test_cancel_batches_after_a_detached_run_cancels_them_and_runs_nothing(
        prefect_harness, support_copy, warehouse_dir, capsys, monkeypatch):
    import flows.prefect_server
    from flows.evaluate import evaluate
    from flows.exit_codes import EXIT_BATCHES_PENDING, EXIT_OK, run_exit_code
    from tests.factories.cli import run_cli
    from tests.selectors.providers.test_batch_runs import SEEDS, experiment

    with slow_batches(support_copy, monkeypatch) as server:
        path = experiment(support_copy, server, "detached", batch="batch: true\nbatch_wait: detach\n")
        first = evaluate(experiment_path=str(path), warehouse_dir=str(warehouse_dir))
        assert run_exit_code(first) == EXIT_BATCHES_PENDING
        assert len(server.batches) == 2 * len(SEEDS)
        assert not any(b.cancel_requested for b in server.batches.values())

        def no_server():
            raise AssertionError("--cancel-batches started a Prefect server")

        monkeypatch.setattr(flows.prefect_server, "run_server", no_server)
        requests = len(server.requests())
        code, out, err = run_cli(capsys, "run", path, "--cancel-batches", "--warehouse", warehouse_dir)
        assert code == EXIT_OK, err
        assert out.strip().splitlines()[-1] == f"{2 * len(SEEDS)} batches cancelled at the provider"
        assert all(b.cancel_requested for b in server.batches.values())
        assert len(server.batches) == 2 * len(SEEDS) and len(server.requests()) == requests  # nothing sent
        code, out, _ = run_cli(capsys, "run", path, "--cancel-batches", "--warehouse", warehouse_dir)
        assert code == EXIT_OK and len(out.strip().splitlines()[-1]) <= 80
