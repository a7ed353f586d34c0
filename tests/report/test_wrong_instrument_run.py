"""A run id of the other instrument is not "no such run": `tooleval compare` on a task run
says it is a task run and that `tooleval tasks report ID` reads it; `tooleval tasks report` on a selection run
says it is a selection run and that `tooleval report ID` reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.cli import main
from tests.factories.rows import RUN, TASK_RUN, warehouse_with_a_task_run

@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    return warehouse_with_a_task_run(tmp_path)


@pytest.mark.parametrize("order", ["task first", "task second"])
def test_compare_on_a_task_run_names_it_and_the_command_that_reads_it(warehouse, capsys, order):
    runs = [TASK_RUN, RUN] if order == "task first" else [RUN, TASK_RUN]
    assert main(["compare", *runs, "--warehouse", str(warehouse)]) == 2
    err = capsys.readouterr().err
    assert "no such run" not in err
    assert f"run {TASK_RUN} is a task run" in err and f"tooleval tasks report {TASK_RUN}" in err


def test_tasks_report_on_a_selection_run_names_it_and_the_command_that_reads_it(warehouse, capsys):
    assert main(["tasks", "report", RUN, "--warehouse", str(warehouse)]) == 2
    err = capsys.readouterr().err
    assert "no such" not in err
    assert f"run {RUN} is a selection run" in err and f"tooleval report {RUN}" in err


def test_an_unknown_id_is_still_no_such_run(warehouse, capsys):
    assert main(["compare", "nope", RUN, "--warehouse", str(warehouse)]) == 2
    assert "no such run in this warehouse" in capsys.readouterr().err
    assert main(["tasks", "report", "nope", "--warehouse", str(warehouse)]) == 2
    assert "no such task run" in capsys.readouterr().err
