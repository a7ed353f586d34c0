"""A new warehouse file is a copy of the blank one kept when the first was created: the same tables, columns,
macros and views, made without creating or binding anything; a blank file that does not open, or a file
holding rows, is never used as one."""

from __future__ import annotations

import duckdb
import pytest

import warehouse.connect
from warehouse.blank_file import blank_file, keep_blank
from warehouse.connect import STORAGE_COMPATIBILITY, connect
from warehouse.views import STAMP_MACRO, definitions_stamp

DEFINITIONS = [
    "SELECT table_name, column_name, data_type, ordinal_position FROM information_schema.columns "
    "ORDER BY table_name, ordinal_position",
    "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY view_name",
    "SELECT function_name, macro_definition FROM duckdb_functions() WHERE function_type LIKE '%macro%' "
    "AND NOT internal ORDER BY function_name, macro_definition",
    f"SELECT {STAMP_MACRO}()",
]


def definitions(path) -> list[list[tuple]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return [con.execute(query).fetchall() for query in DEFINITIONS]
    finally:
        con.close()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLEVAL_CACHE_DIR", str(tmp_path / "cache"))
    return blank_file(definitions_stamp(), STORAGE_COMPATIBILITY)


def test_a_new_warehouse_is_a_copy_of_the_blank_file_the_first_one_left(tmp_path, cache, monkeypatch):
    assert not cache.exists()
    connect(tmp_path / "first" / "tooleval.duckdb").close()  # created: its blank copy is kept
    assert cache.is_file()
    created = definitions(tmp_path / "first" / "tooleval.duckdb")
    assert created[1] and created[3] == [(definitions_stamp(),)]

    def no_creating(*_args):
        raise AssertionError("a new warehouse was created instead of copied")

    monkeypatch.setattr("warehouse.tables.create_tables", no_creating)
    monkeypatch.setattr("warehouse.views.create_views", no_creating)
    con = connect(tmp_path / "second" / "tooleval.duckdb")
    con.execute("SELECT * FROM aggregate_accuracy LIMIT 0").fetchall()
    con.close()
    assert definitions(tmp_path / "second" / "tooleval.duckdb") == created


def test_a_blank_file_that_does_not_open_is_replaced_and_the_warehouse_created(tmp_path, cache):
    cache.parent.mkdir(parents=True)
    cache.write_bytes(b"not a DuckDB file" * 100)
    connect(tmp_path / "wh" / "tooleval.duckdb").close()
    assert definitions(tmp_path / "wh" / "tooleval.duckdb")[3] == [(definitions_stamp(),)]
    assert definitions(cache)[3] == [(definitions_stamp(),)]  # a good blank file kept in its place


def test_a_file_holding_rows_is_never_kept_as_the_blank_one(tmp_path, cache):
    path = tmp_path / "tooleval.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE t AS SELECT 1 AS a")
    keep_blank(con, path, definitions_stamp(), STORAGE_COMPATIBILITY)
    con.close()
    assert not cache.exists()


def test_an_existing_warehouse_is_never_replaced_by_the_blank_file(tmp_path, cache):
    path = tmp_path / "tooleval.duckdb"
    connect(path).close()
    con = warehouse.connect.connect(path)
    con.execute("CREATE TABLE kept AS SELECT 1 AS a")
    con.close()
    connect(path).close()
    assert ("kept", "a", "INTEGER", 1) in definitions(path)[0]
