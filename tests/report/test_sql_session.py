"""`tooleval sql`: one query or a stream of statements over a snapshot of the warehouse, with this project's
DuckDB and views; the warehouse file is never written and never held while the session lasts."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path


from flows.cli import main
from tasks.report.sql_session import Result, render_table
from tests.factories import ROOT

WRITER = """
import sys
from schemas.selection.rows import SelectionRow, SelectionRunRecord
from tests.factories.rows import insert, run_record, selection_row
from warehouse.connect import connect
con = connect(sys.argv[1], wait_s=0)  # no waiting: a held file raises WarehouseBusy at once
insert(con, "landed_rows", SelectionRow, [selection_row("q-new", "refund", True, run_id="run2")])
insert(con, "runs", SelectionRunRecord, [run_record(1, run_id="run2")])
con.close()
print("registered", flush=True)
"""


def test_one_query_prints_a_table_and_leaves_the_file_as_it_was(warehouse, capsys):
    before = (warehouse / "tooleval.duckdb").read_bytes()
    code = main(["sql", "select tool, n, correct, accuracy from per_tool_accuracy order by tool",
                 "--warehouse", str(warehouse)])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0].split() == ["tool", "n", "correct", "accuracy"]
    assert out.splitlines()[2].split() == ["refund", "4", "3", "0.75"]
    assert out.splitlines()[3].split() == ["track", "2", "1", "0.5"]
    assert "(2 rows)" in out
    assert (warehouse / "tooleval.duckdb").read_bytes() == before


def test_a_refused_statement_exits_2_with_duckdb_s_message_and_writes_nothing(warehouse, capsys):
    before = (warehouse / "tooleval.duckdb").read_bytes()
    assert main(["sql", "select nonsense from runs", "--warehouse", str(warehouse)]) == 2
    assert "nonsense" in capsys.readouterr().err
    assert main(["sql", "delete from landed_rows", "--warehouse", str(warehouse)]) == 2
    assert "read-only" in capsys.readouterr().err
    assert (warehouse / "tooleval.duckdb").read_bytes() == before


def test_no_warehouse_is_bad_input_naming_the_file(tmp_path, capsys):
    assert main(["sql", "select 1", "--warehouse", str(tmp_path / "none")]) == 2
    assert "tooleval.duckdb" in capsys.readouterr().err


def test_csv_format_prints_every_row(warehouse, capsys):
    assert main(["sql", "select request_id, correct from selection_rows order by request_id", "--format", "csv",
                 "--warehouse", str(warehouse)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "request_id,correct" and len(lines) == 7 and lines[1] == "refund-000,true"


def test_a_wide_result_cuts_text_then_turns_into_records_and_never_cuts_a_number():
    result = Result(["a_long_column_name", "another_long_column", "value"], [("x" * 30, "y" * 30, 123456.789012)])
    wide = render_table(result, 200)
    assert len(wide.splitlines()[0]) <= 200 and "123456.789" in wide
    cut = render_table(result, 60)  # text cells give way first ('…'), the number stays whole
    assert all(len(line) <= 60 for line in cut.splitlines()) and "xxxxx…" in cut and "123456.789" in cut
    narrow = render_table(result, 30)  # still too wide: one block per record
    assert "value                123456.789" in narrow and "x" * 30 in narrow


def _sql_process(warehouse: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "flows.cli", "sql", "--warehouse", str(warehouse)], cwd=ROOT,
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _answer(process: subprocess.Popen, statement: str) -> list[str]:
    """Send a statement; the lines printed up to its row-count footer."""
    process.stdin.write(statement + "\n")
    process.stdin.flush()
    lines = []
    while not (line := process.stdout.readline()).startswith("("):
        assert line, "the sql process ended early: " + process.stderr.read()
        lines.append(line.rstrip("\n"))
    return lines


def test_an_open_session_never_blocks_another_process_registering(warehouse):
    session = _sql_process(warehouse)
    try:
        # a statement over two lines, answered from the snapshot
        assert _answer(session, "select count(*) as n_runs\nfrom runs;")[-1].strip() == "1"
        started = time.monotonic()
        writer = subprocess.run([sys.executable, "-c", WRITER, str(warehouse / "tooleval.duckdb")], cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                                timeout=120)
        assert writer.returncode == 0, writer.stderr  # the session holds nothing: the writer got the file at once
        assert "registered" in writer.stdout and "waiting" not in writer.stderr
        assert time.monotonic() - started < 60
        # the session still reads its snapshot; .refresh takes a new one that has the new run
        assert _answer(session, "select count(*) as n_runs from runs;")[-1].strip() == "1"
        session.stdin.write(".refresh\n")
        assert _answer(session, "select count(*) as n_runs from runs;")[-1].strip() == "2"
        assert _answer(session, "select count(*) as n from selection_rows where run_id = 'run2';")[-1].strip() == "1"
        session.stdin.close()
        assert session.wait(timeout=60) == 0
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()
