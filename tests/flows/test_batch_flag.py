"""``--batch`` is offered only where it sends batches: ``tasks run`` has no such flag, and ``tooleval run
--batch`` of a task experiment is refused as bad input before any server starts, with nothing written."""

from __future__ import annotations

import pytest

from flows.cli import main
from flows.exit_codes import EXIT_BAD_INPUT
from tests.factories.cli import run_cli
from tests.flows.test_one_core import desk_experiment


def test_tasks_run_offers_no_batch_flag(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["tasks", "run", str(desk_experiment(tmp_path)), "--batch"])
    assert stopped.value.code == 2 and "unrecognized arguments: --batch" in capsys.readouterr().err


def test_a_task_experiment_run_with_batch_is_refused_before_a_server_starts(tmp_path, capsys, monkeypatch):
    import flows.prefect_server

    def no_server():
        raise AssertionError("a Prefect server was started for a refused run")

    monkeypatch.setattr(flows.prefect_server, "run_server", no_server)
    warehouse = tmp_path / "wh"
    code, out, err = run_cli(capsys, "run", desk_experiment(tmp_path), "--batch", "--warehouse", warehouse)
    assert code == EXIT_BAD_INPUT, err
    assert "[batch] --batch: a surface experiment sends no requests through a provider batch API" in err
    assert not warehouse.exists()
