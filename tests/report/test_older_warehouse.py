"""A warehouse file written by an older tooleval (fewer tables, fewer columns) still answers every view of
this one through a read-only connection, and nothing is written to it."""

from __future__ import annotations

import duckdb

from tasks.report.publish import open_read_only
from warehouse.connect import connect
from warehouse.views import view_files


def test_every_view_answers_on_an_older_file_without_writing_it(tmp_path):
    path = tmp_path / "tooleval.duckdb"
    con = connect(path)
    newest = [name for (name,) in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'").fetchall()]
    con.execute("DROP VIEW IF EXISTS selection_rows CASCADE")
    for (name,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall():
        con.execute(f"DROP VIEW IF EXISTS {name} CASCADE")
    dropped = [t for t in newest if t not in ("landed_rows", "runs", "arms")]
    for table in dropped:
        con.execute(f"DROP TABLE {table}")
    con.execute("ALTER TABLE landed_rows DROP COLUMN judge_cost_usd")  # a column a newer model added
    con.close()
    before = path.read_bytes()

    reader = open_read_only(path)
    for name in view_files():
        reader.execute(f"SELECT * FROM {name} LIMIT 0").fetchall()
    reader.close()

    assert dropped and path.read_bytes() == before
    assert duckdb.connect(str(path), read_only=True).execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'offered_tools'").fetchall() == [(0,)]
