"""A DuckDB file held by another process: writers and readers wait a bounded time, then say so."""

from __future__ import annotations

import time
from pathlib import Path

import duckdb
import pytest

from tests.factories.processes import hold
from warehouse.connect import WarehouseBusy, WarehouseUnreadable, connect, open_file


def test_a_writer_waits_then_raises_busy_naming_the_holder(tmp_path, capsys):
    path = tmp_path / "w.duckdb"
    duckdb.connect(str(path)).close()
    holder = hold(path, 30)
    try:
        started = time.monotonic()
        with pytest.raises(WarehouseBusy) as caught:
            open_file(path, read_only=False, wait_s=0.5)
        assert time.monotonic() - started >= 0.5
        assert f"process {holder.pid}" in str(caught.value)
        assert "waiting up to" in capsys.readouterr().err  # said once, visibly
    finally:
        holder.kill()
        holder.wait()


def test_a_writer_gets_the_file_once_the_reader_closes_it(tmp_path):
    path = tmp_path / "w.duckdb"
    duckdb.connect(str(path)).close()
    holder = hold(path, 1.0)
    try:
        con = connect(path, wait_s=60)  # the holder exits after ~1 s; the writer then proceeds
        assert con.execute("select count(*) from runs").fetchall() == [(0,)]
        con.close()
    finally:
        holder.wait()


def test_a_file_that_is_not_duckdb_is_unreadable_not_a_crash(tmp_path):
    path = tmp_path / "w.duckdb"
    path.write_bytes(b"not a database " * 200)
    with pytest.raises(WarehouseUnreadable):
        open_file(path, read_only=True, wait_s=0)
