"""A read-only connection reads a file stamped with this tooleval's definitions as it is, and gives a file
with another stamp the current views as temporary ones, writing nothing."""

from __future__ import annotations

from tasks.report.publish import open_read_only
from warehouse.connect import connect
from warehouse.views import STAMP_MACRO, definitions_stamp


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
