"""``batch_wait: detach`` through the Prefect flow against the loopback server's batch endpoints
(tests/batch_server.py), whose batches end only after several retrieves: a detached run submits its batches,
polls once and stops with its own exit code, landing and registering nothing; reruns of the same command pick
the batches up until they have ended, then land every row once and register the run, submitting nothing twice."""

from __future__ import annotations

import os

import duckdb
import pytest

from flows.exit_codes import EXIT_BATCHES_PENDING, EXIT_OK, run_exit_code
from tests.batch_server import BatchServer
from tests.factories.catalogues import support_tools
from tests.provider_server import oracle
from tests.selectors.providers.conftest import FAKE_KEY
from tests.selectors.providers.example_arguments import example_arguments
from tests.selectors.providers.test_batch_runs import SEEDS, experiment
from tests.selectors.providers.test_provider_flow import trimmed_support

pytestmark = pytest.mark.slow  # Prefect runs


def landed_runs(warehouse) -> set[str]:
    return {folder.name for folder in warehouse.rglob("run_id=*")}


def test_a_detached_run_stops_until_its_batches_end_and_a_rerun_lands_every_row_once(
        prefect_harness, support_copy, warehouse_dir):
    from flows.evaluate import evaluate

    expected = trimmed_support(support_copy)
    arguments = {t.name: example_arguments(t.parameters) for t in support_tools()}
    units = 2 * len(SEEDS)
    with BatchServer(oracle(expected, arguments), api_key=FAKE_KEY, polls_to_end=3) as server:
        os.environ.setdefault("OPENAI_API_KEY", FAKE_KEY)
        os.environ.setdefault("ANTHROPIC_API_KEY", FAKE_KEY)
        path = experiment(support_copy, server, "detached", batch="batch: true\nbatch_wait: detach\n")
        first = evaluate(experiment_path=str(path), warehouse_dir=str(warehouse_dir))
        assert run_exit_code(first) == EXIT_BATCHES_PENDING
        assert (first.batches_pending, first.n_rows, first.registered, first.verdict) == (units, 0, False, None)
        assert len(server.batches) == units and set(server.submissions.values()) == {1}
        assert not landed_runs(warehouse_dir)  # nothing landed, nothing registered
        assert not (warehouse_dir / "registrations" / first.run_id).exists()

        reruns = []
        while not reruns or reruns[-1].batches_pending:
            assert len(reruns) < 4, "the batches never ended"
            reruns.append(evaluate(experiment_path=str(path), warehouse_dir=str(warehouse_dir)))
        assert len(reruns) >= 2  # one rerun still found its batches running
        assert all(run_exit_code(r) == EXIT_BATCHES_PENDING and not r.n_rows for r in reruns[:-1])
        last = reruns[-1]
        assert last.registered and last.n_rows == units * len(expected)
        assert run_exit_code(last) == EXIT_OK or last.verdict is not None
        n = units * len(expected)
        # the reruns created no batch, no request was submitted twice, every line ran once and no call was made
        sent = (len(server.batches), sum(server.submissions.values()), set(server.submissions.values()),
                len(server.requests()))
        assert sent == (units, n, {1}, n)
    with duckdb.connect(str(warehouse_dir / "tooleval.duckdb"), read_only=True) as con:
        runs = con.execute("select run_id from runs").fetchall()
        rows = con.execute("select count(*), count(distinct (arm, seed, request_id)), bool_and(sent_as = 'batch') "
                           "from selection_rows").fetchone()
    assert runs == [(last.run_id,)]
    assert rows == (n, n, True)
    assert landed_runs(warehouse_dir) == {f"run_id={last.run_id}"}


def test_the_waiting_line_fits_80_columns():
    from flows.evaluate import batches_pending_line

    assert batches_pending_line(1).startswith("1 batch still running at the provider")
    assert all(len(batches_pending_line(n)) <= 80 for n in (1, 9, 99))
    assert "rerun the same command to pick them up" in batches_pending_line(12)


def test_detaching_without_the_cache_is_refused_before_a_server_starts(support_copy, tmp_path, capsys, monkeypatch):
    import flows.prefect_server
    from flows.exit_codes import EXIT_BAD_INPUT
    from tests.factories.cli import run_cli

    def no_server():
        raise AssertionError("a Prefect server was started for a refused run")

    monkeypatch.setattr(flows.prefect_server, "run_server", no_server)
    warehouse = tmp_path / "wh"
    with BatchServer(api_key=FAKE_KEY) as server:
        path = experiment(support_copy, server, "uncached", batch="batch: true\n")
        code, _, err = run_cli(capsys, "run", path, "--batch-wait", "detach", "--no-cache", "--warehouse", warehouse)
    assert code == EXIT_BAD_INPUT, err
    assert "detach needs the cache" in err and not server.batches
    assert not (warehouse / "tooleval.duckdb").exists()


def test_a_detached_deployment_flow_run_schedules_its_follow_up_and_ends_completed(
        prefect_harness, support_copy, warehouse_dir):
    """The pre-change flow run as a worker runs a deployment's flow run (Prefect's flow engine handed the flow
    run the API created from the deployment): Completed, naming the Scheduled follow-up of the same deployment
    with the same parameters; outside a deployment the same flow ends Failed with exit 8."""
    import uuid

    from prefect.client.orchestration import get_client
    from prefect.flow_engine import run_flow

    from flows.pre_change import pre_change

    expected = trimmed_support(support_copy)
    arguments = {t.name: example_arguments(t.parameters) for t in support_tools()}
    with BatchServer(oracle(expected, arguments), api_key=FAKE_KEY, polls_to_end=20) as server:
        os.environ.setdefault("OPENAI_API_KEY", FAKE_KEY)
        os.environ.setdefault("ANTHROPIC_API_KEY", FAKE_KEY)
        path = experiment(support_copy, server, "deployed", batch="batch: true\n")
        parameters = {"experiment_path": str(path), "warehouse_dir": str(warehouse_dir), "batch_wait": "detach",
                      "follow_up_s": 1800.0}
        alone = pre_change(**parameters, return_state=True)
        assert alone.is_failed()
        assert alone.message == (f"WAITING — {2 * len(SEEDS)} batches still running at the provider; rerun the "
                                 f"same command to pick them up (exit {EXIT_BATCHES_PENDING})")
        with get_client(sync_client=True) as client:
            deployment_id = client.create_deployment(flow_id=client.create_flow_from_name("pre-change"),
                                                     name=f"detached-{uuid.uuid4().hex[:8]}")
            flow_run = client.create_flow_run_from_deployment(deployment_id, parameters=parameters)
        state = run_flow(pre_change, flow_run=flow_run, parameters=parameters, return_type="state")
        assert len(server.batches) == 2 * len(SEEDS)  # the deployment's run picked up the first run's batches
    assert state.is_completed() and "follow-up flow run" in state.message, state.message
    with get_client(sync_client=True) as client:
        runs = client.read_flow_runs()
    follow_ups = [r for r in runs if r.deployment_id == deployment_id and r.id != flow_run.id]
    assert len(follow_ups) == 1 and follow_ups[0].state.is_scheduled()
    assert str(follow_ups[0].id) in state.message
    assert {name: follow_ups[0].parameters.get(name) for name in parameters} == parameters  # the same run again
    assert not landed_runs(warehouse_dir)


def test_tooleval_run_detached_ends_with_exit_8_and_one_line(prefect_harness, support_copy, tmp_path, capsys):
    from tests.factories.cli import run_cli

    expected = trimmed_support(support_copy)
    arguments = {t.name: example_arguments(t.parameters) for t in support_tools()}
    warehouse = tmp_path / "wh"
    with BatchServer(oracle(expected, arguments), api_key=FAKE_KEY, polls_to_end=20) as server:
        os.environ.setdefault("OPENAI_API_KEY", FAKE_KEY)
        os.environ.setdefault("ANTHROPIC_API_KEY", FAKE_KEY)
        path = experiment(support_copy, server, "cli", batch="batch: true\n")
        code, out, err = run_cli(capsys, "run", path, "--batch-wait", "detach", "--warehouse", warehouse)
    assert code == EXIT_BATCHES_PENDING, err[-3000:]
    last = err.rstrip().splitlines()[-1]
    assert last == f"{2 * len(SEEDS)} batches still running at the provider; rerun the same command to pick them up"
    assert len(last) <= 80 and "verdict" not in out + err and not landed_runs(warehouse)
