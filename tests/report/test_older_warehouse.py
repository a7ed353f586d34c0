"""A warehouse file written by an older tooleval (fewer tables, fewer columns) still answers every view of
this one through a read-only connection, and nothing is written to it."""

from __future__ import annotations

import duckdb

from tasks.report.publish import open_read_only
from warehouse.connect import connect
from warehouse.views import STAMP_MACRO, definitions_stamp, view_files


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
    con.execute("ALTER TABLE landed_rows DROP COLUMN nearest_example_cos")  # and two of issue 28 item 6
    con.execute("ALTER TABLE arms DROP COLUMN far_cutoff")
    con.execute(f"DROP MACRO {STAMP_MACRO}")  # an older tooleval did not stamp the file with these definitions
    con.close()
    before = path.read_bytes()

    reader = open_read_only(path)
    for name in view_files():
        reader.execute(f"SELECT * FROM {name} LIMIT 0").fetchall()
    reader.close()

    assert dropped and path.read_bytes() == before
    assert duckdb.connect(str(path), read_only=True).execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'offered_tools'").fetchall() == [(0,)]


def test_a_file_stamped_with_these_definitions_is_read_as_it_is_and_not_migrated_again(tmp_path):
    """The stamp (warehouse/views.py) says the file's tables, macros and views are this tooleval's: a reader
    uses the stored views (no temporary ones: ~0.9 s of binding saved), a writer creates nothing."""
    path = tmp_path / "tooleval.duckdb"
    connect(path).close()
    reader = open_read_only(path)
    assert reader.execute(f"SELECT {STAMP_MACRO}()").fetchall() == [(definitions_stamp(),)]
    assert reader.execute("SELECT count(*) FROM duckdb_views() WHERE temporary AND NOT internal").fetchall() == [(0,)]
    reader.execute("SELECT * FROM aggregate_accuracy LIMIT 0").fetchall()
    reader.close()
    before = path.read_bytes()
    connect(path).close()  # the same definitions: nothing to bring up to date
    assert path.read_bytes() == before


def test_a_file_with_another_stamp_is_brought_up_to_date(tmp_path):
    path = tmp_path / "tooleval.duckdb"
    con = connect(path)
    con.execute(f"CREATE OR REPLACE MACRO {STAMP_MACRO}() AS 'made by another tooleval'")
    con.execute("DROP VIEW aggregate_accuracy")
    con.close()
    reader = open_read_only(path)  # not this tooleval's: the current views, as temporary ones
    reader.execute("SELECT * FROM aggregate_accuracy LIMIT 0").fetchall()
    reader.close()
    con = connect(path)  # a writer brings it up to date and stamps it
    assert con.execute(f"SELECT {STAMP_MACRO}()").fetchall() == [(definitions_stamp(),)]
    con.execute("SELECT * FROM aggregate_accuracy LIMIT 0").fetchall()
    con.close()
