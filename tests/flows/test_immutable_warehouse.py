"""A warehouse folder made immutable mid-run (``chattr -R +i``) killed the run with SIGBUS (exit -7) and no
message: SQLite's WAL index is a memory-mapped ``-shm`` file, and a write through that map
to a file that no longer takes writes is a signal, not an error. The project's SQLite files now use a
rollback journal, so it is an error, and the run's message says the warehouse stopped accepting writes.

Needs root and a file system with the immutable attribute (ext4, xfs, btrfs); skipped elsewhere."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import pytest

from flows.crash import _hint
from tests.drill.harness import can_freeze
from tests.factories import ROOT
from tests.factories.prefect_api import migrated_home


@pytest.fixture
def freezable(tmp_path):
    if not can_freeze(tmp_path):
        pytest.skip("needs root and chattr on a file system with the immutable attribute")
    folder = tmp_path / "wh" / "cache"
    folder.mkdir(parents=True)
    yield folder
    subprocess.run(["chattr", "-R", "-i", str(tmp_path / "wh")], capture_output=True)


WRITER = textwrap.dedent("""
    import subprocess, sys
    from tasks.files.sqlite_files import open_shared_sqlite
    path, folder = sys.argv[1], sys.argv[2]
    con = open_shared_sqlite(path)
    con.execute("CREATE TABLE t (key TEXT PRIMARY KEY, v TEXT)")
    con.execute("INSERT INTO t VALUES ('a', 'before')")
    reader = open_shared_sqlite(path)  # a second connection open across the freeze, as a run's units have
    print("mode", con.execute("PRAGMA journal_mode").fetchone()[0], flush=True)
    subprocess.run(["chattr", "-R", "+i", folder], check=True)
    try:
        con.execute("INSERT INTO t VALUES ('b', 'after')")
        print("written", flush=True)
    except Exception as error:
        print("refused", type(error).__name__, error, flush=True)
    print("read", reader.execute("SELECT count(*) FROM t").fetchone()[0], flush=True)
    reader.close()
    con.close()
    print("closed", flush=True)
""")


def test_a_cache_frozen_while_open_refuses_the_write_with_an_error_not_a_signal(freezable):
    done = subprocess.run([sys.executable, "-c", WRITER, str(freezable / "selections.sqlite"), str(freezable)],
                          capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)  # -7 was SIGBUS
    lines = done.stdout.splitlines()
    assert lines[0] == "mode truncate"
    assert lines[1].startswith("refused OperationalError")  # 'attempt to write a readonly database' or 'disk I/O error'
    assert "readonly" in lines[1] or "disk I/O error" in lines[1]
    assert lines[2:] == ["read 1", "closed"]
    subprocess.run(["chattr", "-R", "-i", str(freezable)], check=True)
    with sqlite3.connect(freezable / "selections.sqlite") as con:  # what was written before stays
        assert con.execute("SELECT v FROM t").fetchall() == [("before",)]


def test_an_older_wal_cache_is_switched_to_the_rollback_journal_when_opened(tmp_path):
    from tasks.files.sqlite_files import open_shared_sqlite

    path = tmp_path / "selections.sqlite"
    old = sqlite3.connect(path, isolation_level=None)
    old.execute("PRAGMA journal_mode=WAL")
    old.execute("CREATE TABLE t (key TEXT PRIMARY KEY, v TEXT)")
    old.execute("INSERT INTO t VALUES ('a', 'kept')")
    old.close()
    con = open_shared_sqlite(path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "truncate"
    assert con.execute("SELECT v FROM t").fetchall() == [("kept",)]
    con.close()


def test_the_message_says_the_warehouse_stopped_accepting_writes(freezable):
    warehouse = freezable.parent
    subprocess.run(["chattr", "-R", "+i", str(warehouse)], check=True)
    error = sqlite3.OperationalError("attempt to write a readonly database")
    hint = _hint(error, [warehouse])
    assert hint.startswith("the warehouse stopped accepting writes: ") and str(warehouse) in hint
    assert "rerun" in hint
    subprocess.run(["chattr", "-R", "-i", str(warehouse)], check=True)
    assert not _hint(error, [warehouse]).startswith("the warehouse stopped")  # writable: not blamed on it


@pytest.mark.slow
def test_a_run_whose_warehouse_is_frozen_mid_run_ends_with_a_message_and_the_rerun_resumes(tmp_path):
    from tests.drill.harness import drill_experiment, freeze_the_warehouse

    if not can_freeze(tmp_path):
        pytest.skip("needs root and chattr on a file system with the immutable attribute")
    outcome = freeze_the_warehouse(drill_experiment(tmp_path / "shop"), tmp_path,
                                   migrated_home(tmp_path / "prefect-home"))
    assert outcome.exit_code == 6 and outcome.rerun_exit in (0, 1), outcome.problems
    assert outcome.rows_lost == 0 and outcome.duplicated == 0 and not outcome.problems, outcome.problems
