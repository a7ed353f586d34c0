"""The project's DuckDB shell (the ``analyst`` extra's ``duckdb-cli``) opens a warehouse file tooleval
wrote: every view answers there, with the same figures as tooleval's own DuckDB."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from warehouse.connect import connect
from tests.warehouse.test_views import load, row

SHELL = Path(sys.executable).parent / "duckdb"


def shell(db: Path, sql: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SHELL), "-readonly", "-csv", str(db), "-c", sql], capture_output=True, text=True,
                          timeout=60)


def test_the_pinned_duckdb_shell_reads_every_view_of_a_warehouse_file(tmp_path):
    db = tmp_path / "tooleval.duckdb"
    con = connect(db)
    load(con, [row("q1", "refund", "refund"), row("q2", "track", "reset"), row("q2", "track", "track", seed=2),
               row("q9", "track", "track", slice_="s2")], weights={"refund": 0.6, "track": 0.4})
    views = [r[0] for r in con.execute("select view_name from duckdb_views() where not internal").fetchall()]
    ours = con.execute("select slice, n, correct from aggregate_accuracy order by slice").fetchall()
    con.close()
    assert len(views) > 20
    for view in views:
        done = shell(db, f'select count(*) from "{view}"')
        assert done.returncode == 0 and "Error" not in done.stderr, (view, done.stderr)
    done = shell(db, "select slice, n, correct from aggregate_accuracy order by slice")
    assert done.returncode == 0, done.stderr
    theirs = [(s, int(n), int(c)) for s, n, c in list(csv.reader(io.StringIO(done.stdout)))[1:]]
    assert theirs == ours == [("s1", 3, 2), ("s2", 1, 1)]


def test_a_file_in_a_newer_storage_format_is_refused_by_the_shell_not_damaged(tmp_path):
    """The reason for the storage setting: the shell cannot read DuckDB 2's own format (tooleval sql can)."""
    db = tmp_path / "newer.duckdb"
    duckdb.connect(str(db)).execute("create table t as select 1 as a").close()
    done = shell(db, "select * from t")
    assert done.returncode != 0
    with duckdb.connect(str(db), read_only=True) as again:
        assert again.execute("select a from t").fetchall() == [(1,)]


@pytest.fixture(autouse=True)
def _shell_installed():
    assert SHELL.is_file(), f"{SHELL} is missing: `make install` installs the analyst extra's duckdb-cli"
