"""Landing is atomic and registration idempotent: nothing landed is lost or duplicated."""

from __future__ import annotations

from datetime import datetime, timezone

import duckdb
import pyarrow as pa

from schemas.arrow import to_arrow_table
from schemas.selection.rows import SelectionRow, SelectionRunRecord
from tests.warehouse.test_views import row
from warehouse.parquet_store import run_files, write_partition
from warehouse.register_run import RunRegistration, register_run

NOW = datetime(2026, 11, 30, tzinfo=timezone.utc)


def registration(run_id: str = "run1") -> RunRegistration:
    run = SelectionRunRecord(run_id=run_id, experiment="e", experiment_path="e.yaml", experiment_hash="h", taskset="t",
                    started_at=NOW, finished_at=NOW, n_rows=0, criteria_hash=None, criteria_registered_at=None,
                    weights_window=None, tooleval_version="test")
    return RunRegistration("selection", {"runs": [run]})


def table(n: int, seed: int = 1) -> pa.Table:
    return to_arrow_table(SelectionRow, [row(f"q{i}", "refund", "refund", seed=seed) for i in range(n)])


def test_a_half_written_file_is_never_read(tmp_path):
    rows_dir = tmp_path / "rows"
    path = write_partition(rows_dir, "run1", "a", 1, 0, table(3))
    (path.parent / ".tmp-crashed-part-00001.parquet").write_bytes(b"PAR1 half a file")
    assert run_files(rows_dir, "run1") == [path]
    assert register_run(tmp_path, registration()) == 3


def test_rewriting_a_batch_replaces_it_and_reregistering_duplicates_nothing(tmp_path):
    rows_dir, db = tmp_path / "rows", tmp_path / "tooleval.duckdb"
    write_partition(rows_dir, "run1", "a", 1, 0, table(3))
    write_partition(rows_dir, "run1", "a", 2, 0, table(3, seed=2))
    assert register_run(tmp_path, registration()) == 6
    write_partition(rows_dir, "run1", "a", 1, 0, table(3))  # a retried task lands the same batch again
    assert register_run(tmp_path, registration()) == 6
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("select count(*), count(distinct (seed, request_id)) from selection_rows").fetchall() == [(6, 6)]
    assert con.execute("select n_rows from runs").fetchall() == [(6,)]
    con.close()


def test_another_run_is_kept_when_one_is_registered(tmp_path):
    rows_dir, db = tmp_path / "rows", tmp_path / "tooleval.duckdb"
    write_partition(rows_dir, "run1", "a", 1, 0, table(2))
    write_partition(rows_dir, "run2", "a", 1, 0, table(5))
    register_run(tmp_path, registration("run1"))
    register_run(tmp_path, registration("run2"))
    register_run(tmp_path, registration("run1"))
    con = duckdb.connect(str(db), read_only=True)
    assert dict(con.execute("select run_id, count(*) from selection_rows group by 1").fetchall()) == {"run1": 2, "run2": 5}
    con.close()


def test_rows_landed_before_a_column_was_added_register_with_it_null(tmp_path):
    """Parquet landed by an older tooleval lacks nearest_example_cos: registration fills it
    with NULL beside a newer batch that has it."""
    rows_dir, db = tmp_path / "rows", tmp_path / "tooleval.duckdb"
    older = table(2).drop_columns(["nearest_example_cos"])
    newer = to_arrow_table(SelectionRow, [{**row("q9", "refund", "refund", seed=2), "nearest_example_cos": 0.42}])
    write_partition(rows_dir, "run1", "a", 1, 0, older)
    write_partition(rows_dir, "run1", "a", 2, 0, newer)
    assert register_run(tmp_path, registration()) == 3
    con = duckdb.connect(str(db), read_only=True)
    assert sorted(con.execute("select request_id, nearest_example_cos from selection_rows").fetchall(),
                  key=str) == [("q0", None), ("q1", None), ("q9", 0.42)]
    con.close()


def test_registering_a_selection_run_imports_no_other_instruments_models(tmp_path):
    """Registration reads the row models of the run's own instrument (its card) only."""
    import subprocess
    import sys
    from pathlib import Path

    from warehouse.connect import connect

    connect(tmp_path / "tooleval.duckdb").close()  # the tables of every instrument: made here, not in the child
    code = ("import sys\nfrom tests.warehouse.test_landing import registration, table\n"
            "from warehouse.parquet_store import write_partition\n"
            "from warehouse.register_run import load_registration, register_run, save_registration\n"
            f"root = {str(tmp_path)!r}\nwrite_partition(root + '/rows', 'run1', 'a', 1, 0, table(3))\n"
            "save_registration(root + '/registrations', registration())\n"
            "print(register_run(root, load_registration(root + '/registrations', 'run1')),"
            " 'schemas.surface.rows' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["3", "False"]
