"""What a run checks before Prefect starts, and what it does when another process holds the DuckDB file."""

from __future__ import annotations

import os

import duckdb
import pytest
import yaml

from flows.cli import EXIT_BAD_INPUT, EXIT_GATE_FAILED, EXIT_OK, main
from flows.exit_codes import EXIT_CRASHED, EXIT_NOT_REGISTERED
from tests.factories.cli import run_cli
from tests.factories.processes import hold
from tests.factories.taskset import write_experiment, write_taskset
from warehouse.connect import connect


@pytest.mark.parametrize("seeds, rule", [([], "[seeds-given]"), ([1, 2, 2 ** 63], "[seed-range]")])
def test_seeds_are_checked_before_anything_runs(tmp_path, capsys, seeds, rule):
    experiment = write_experiment(write_taskset(tmp_path / "shop"), seeds=seeds, declared={"few_seeds": "test"})
    code, _, err = run_cli(capsys, "run", str(experiment), "--warehouse", str(tmp_path / "wh"))
    assert code == EXIT_BAD_INPUT and rule in err
    assert not (tmp_path / "wh").exists()


def test_a_warehouse_that_is_a_file_or_not_duckdb_is_bad_input(tmp_path, capsys):
    experiment = write_experiment(write_taskset(tmp_path / "shop"))
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    code, _, err = run_cli(capsys, "run", str(experiment), "--warehouse", str(a_file))
    assert code == EXIT_BAD_INPUT and "[warehouse-writable]" in err and "is a file" in err
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "tooleval.duckdb").write_bytes(b"garbage " * 500)
    code, _, err = run_cli(capsys, "run", str(experiment), "--warehouse", str(corrupt))
    assert code == EXIT_BAD_INPUT and "[warehouse-readable]" in err
    assert sorted(p.name for p in corrupt.iterdir()) == ["tooleval.duckdb"]  # nothing else written
    code, _, err = run_cli(capsys, "report", "--warehouse", str(corrupt))
    assert code == EXIT_BAD_INPUT and "[warehouse-readable]" in err and "Traceback" not in err


def test_a_truncated_warehouse_file_is_called_damaged_and_refused_before_anything_runs(tmp_path, capsys):
    experiment = write_experiment(write_taskset(tmp_path / "shop"))
    truncated = tmp_path / "truncated"
    truncated.mkdir()
    db = truncated / "tooleval.duckdb"
    connect(db).close()  # a real warehouse file (tables, views), then cut in half as a full disk or a copy would
    os.truncate(db, db.stat().st_size // 2)
    before = db.read_bytes()
    for args in (("run", str(experiment)), ("report",), ("sql", "select 1")):
        code, _, err = run_cli(capsys, *args, "--warehouse", str(truncated))
        assert code == EXIT_BAD_INPUT, (args, err)
        assert "[warehouse-readable]" in err and "damaged" in err and "run the command again" not in err, (args, err)
    assert db.read_bytes() == before and sorted(p.name for p in truncated.iterdir()) == ["tooleval.duckdb"]


def test_an_unwritable_prefect_home_is_bad_input(tmp_path, capsys, monkeypatch):
    experiment = write_experiment(write_taskset(tmp_path / "shop"))
    (tmp_path / "afile").write_text("x")
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setattr("flows.prefect_server.configured_api_url", lambda: None)  # even inside a test harness
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "afile" / "home"))
    code, _, err = run_cli(capsys, "run", str(experiment), "--warehouse", str(tmp_path / "wh"))
    assert code == EXIT_BAD_INPUT and "[prefect-home-writable]" in err


def test_unknown_run_and_bad_numbers_are_messages_not_tracebacks(tmp_path, capsys):
    experiment = write_experiment(write_taskset(tmp_path / "shop"))
    code, _, err = run_cli(capsys, "report", "nosuchrun", "--warehouse", str(tmp_path / "none"))
    assert code == EXIT_BAD_INPUT and "[warehouse-exists]" in err
    for args in (["plan", "--accuracy", "0.9", "--requests", "0"], ["run", str(experiment), "--max-calls", "-1"]):
        with pytest.raises(SystemExit) as stopped:
            main(args)
        assert stopped.value.code == 2 and "must be" in capsys.readouterr().err


def test_a_crash_is_one_message_and_its_own_exit_code(tmp_path, capsys, monkeypatch):
    import tasks.run.prepare_run

    def broken(*args, **kwargs):
        raise RuntimeError("something inside broke")

    monkeypatch.setattr(tasks.run.prepare_run, "prepare_run", broken)  # flows/api.py calls it through its module
    experiment = write_experiment(write_taskset(tmp_path / "shop"))
    code, _, err = run_cli(capsys, "run", str(experiment), "--warehouse", str(tmp_path / "wh"))
    assert code == EXIT_CRASHED and "something inside broke" in err and "Traceback" not in err
    assert "the traceback is in" in err


def test_a_held_warehouse_ends_the_run_with_exit_5_and_register_finishes_it(
        prefect_harness, tmp_path, capsys, monkeypatch):
    root = write_taskset(tmp_path / "shop")
    experiment = write_experiment(root)
    warehouse = tmp_path / "wh"
    assert run_cli(capsys, "run", str(experiment), "--warehouse", str(warehouse))[0] in (EXIT_OK, EXIT_GATE_FAILED)
    monkeypatch.setenv("TOOLEVAL_LOCK_WAIT_S", "1")
    holder = hold(warehouse / "tooleval.duckdb", 120)  # an analyst's read-only session in another process
    try:
        code, _, err = run_cli(capsys, "run", str(experiment), "--warehouse", str(warehouse))
        assert code == EXIT_NOT_REGISTERED and "NOT registered" in err and "tooleval register" in err
        run_id = err.split("tooleval register ")[1].split()[0]
    finally:
        holder.kill()
        holder.wait()
    rows = list((warehouse / "rows" / f"run_id={run_id}").rglob("part-*.parquet"))
    assert rows  # the rows landed
    code, out, _ = run_cli(capsys, "register", run_id, "--warehouse", str(warehouse))
    assert code in (EXIT_OK, EXIT_GATE_FAILED) and f"run {run_id}:" in out
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    counts = dict(con.execute("select run_id, count(*) from selection_rows group by run_id").fetchall())
    con.close()
    assert len(counts) == 2 and counts[run_id] == max(counts.values())  # registered once, nothing duplicated
    # registering a registered, reported run again changes nothing (no second judging) and says so
    report = warehouse / "reports" / run_id / "report.md"
    before = (report.stat().st_mtime_ns, (warehouse / "tooleval.duckdb").read_bytes())
    again, out, _ = run_cli(capsys, "register", run_id, "--warehouse", str(warehouse))
    assert again == code and "was registered and reported before: nothing was changed" in out
    assert (report.stat().st_mtime_ns, (warehouse / "tooleval.duckdb").read_bytes()) == before
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    assert con.execute("select count(*) from selection_rows where run_id = ?", [run_id]).fetchall()[0][0] == counts[run_id]
    con.close()


def test_the_next_run_registers_a_run_that_landed_without_registering(prefect_harness, tmp_path, capsys, monkeypatch):
    root = write_taskset(tmp_path / "shop")
    experiment = write_experiment(root)
    warehouse = tmp_path / "wh"
    run_cli(capsys, "run", str(experiment), "--warehouse", str(warehouse))
    monkeypatch.setenv("TOOLEVAL_LOCK_WAIT_S", "1")
    holder = hold(warehouse / "tooleval.duckdb", 120)
    try:
        code, _, err = run_cli(capsys, "run", str(experiment), "--warehouse", str(warehouse))
        assert code == EXIT_NOT_REGISTERED
        waiting = err.split("tooleval register ")[1].split()[0]
    finally:
        holder.kill()
        holder.wait()
    code, out, _ = run_cli(capsys, "run", str(experiment), "--warehouse", str(warehouse))
    assert f"also registered: run {waiting}" in out
    assert yaml is not None


def test_the_disk_check_asks_for_what_a_run_needs(tmp_path):
    """A 30 MiB volume takes a 3,240-row run into a new warehouse (it needs about 11 MB; the check asked for
    65 MiB); a full one is refused; an existing DuckDB file adds its own size (a checkpoint may rewrite it)."""
    from tasks.run.preflight import disk_needed

    db = tmp_path / "tooleval.duckdb"
    assert disk_needed(3_240, db) < 30 * 2**20 and disk_needed(3_240, db) > 11 * 10**6
    db.write_bytes(b"\0" * 2**20)
    assert disk_needed(3_240, db) == disk_needed(3_240, tmp_path / "absent.duckdb") + 2**20
