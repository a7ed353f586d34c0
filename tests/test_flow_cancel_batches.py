"""A deployment flow run cancelled through Prefect cancels at the provider the batches its run waits on:
the pre-change flow's ``on_cancellation`` hook, run as a worker's runner runs it (Prefect's HookRunner, with
the flow run read back from the session's Prefect server in state Cancelling), against the loopback batch
server (tests/batch_server.py)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from tests.selectors.providers.test_batch_cancel_open import slow_batches
from tests.selectors.providers.test_batch_runs import SEEDS, experiment

pytestmark = pytest.mark.slow  # Prefect runs


def test_a_cancelled_pre_change_flow_run_cancels_its_batches_at_the_provider(
        prefect_harness, support_copy, warehouse_dir, monkeypatch):
    from prefect.client.orchestration import get_client
    from prefect.runner._hook_runner import HookRunner
    from prefect.states import Cancelling

    from flows.pre_change import pre_change
    from tasks.selectors.providers import batch_selection

    # the hook also stops this process's waiting units (as a stopping run's): keep that to this test
    monkeypatch.setattr(batch_selection, "_stop", threading.Event())

    with slow_batches(support_copy, monkeypatch) as server:
        path = experiment(support_copy, server, "cancelled", batch="batch: true\n")
        stopped = pre_change(experiment_path=str(path), warehouse_dir=str(warehouse_dir), batch_wait="detach",
                             return_state=True)
        assert len(server.batches) == 2 * len(SEEDS)  # submitted, still running
        assert not any(b.cancel_requested for b in server.batches.values())
        requests = len(server.requests())

        with get_client(sync_client=True) as client:
            flow_run_id = stopped.state_details.flow_run_id
            client.set_flow_run_state(flow_run_id, Cancelling(message="cancelled by an operator"), force=True)
            flow_run = client.read_flow_run(flow_run_id)
        assert flow_run.state.is_cancelling()

        async def resolve(_):
            return pre_change

        asyncio.run(HookRunner(resolve_flow=resolve).run_cancellation_hooks(flow_run, flow_run.state))
        assert all(b.cancel_requested for b in server.batches.values())
        assert len(server.batches) == 2 * len(SEEDS) and len(server.requests()) == requests  # nothing sent
