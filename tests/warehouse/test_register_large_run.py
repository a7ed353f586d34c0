"""Registration holds a run of any size the selection produces: the landed Parquet streams into
DuckDB in batches, in one transaction, under the registration's fixed memory limit."""

from __future__ import annotations

import duckdb
import pytest

from tests.factories.large_run import land_large_run
from tests.warehouse.test_landing import registration, table
from warehouse.parquet_store import run_files, write_partition
from warehouse.register_run import REGISTER_MEMORY_LIMIT, parquet_batches, register_run


def test_batches_keep_every_file_once_in_order_and_under_the_bound(tmp_path):
    sizes = [5, 3, 9, 1, 1, 20, 2]
    paths = []
    for i, size in enumerate(sizes):
        paths.append(tmp_path / f"part-{i:05d}.parquet")
        paths[-1].write_bytes(b"x" * size)
    batches = parquet_batches(paths, max_bytes=10)
    assert [f for batch in batches for f in batch] == [str(p) for p in paths]
    assert [[int(f[-13:-8]) for f in batch] for batch in batches] == [[0, 1], [2, 3], [4], [5], [6]]
    assert parquet_batches([], max_bytes=10) == []


def test_a_run_in_many_batches_registers_every_row_once(tmp_path, monkeypatch):
    """Batches far smaller than the run: each file in one INSERT, all in the one transaction."""
    rows_dir = tmp_path / "rows"
    for seed in (1, 2):
        for batch in range(4):
            rows = table(3, seed=seed)
            column = rows.schema.get_field_index("request_id")
            rows = rows.set_column(column, rows.schema.field(column), [[f"q{batch}-{i}" for i in range(3)]])
            write_partition(rows_dir, "run1", "a", seed, batch, rows)
    monkeypatch.setattr("warehouse.register_run.REGISTER_BATCH_BYTES", 1)
    assert len(parquet_batches(run_files(rows_dir, "run1"), 1)) == 8
    assert register_run(tmp_path, registration()) == 24
    assert register_run(tmp_path, registration()) == 24
    con = duckdb.connect(str(tmp_path / "tooleval.duckdb"), read_only=True)
    assert con.execute("select count(*), count(distinct (seed, request_id)) from selection_rows").fetchall() == [(24, 24)]
    con.close()


@pytest.mark.slow
def test_a_171k_row_run_with_200_option_probability_maps_registers(tmp_path):
    """The MetaTool hold-out's shape, a little larger: 19,000 requests x 3 arms x 3 seeds, each row with a
    200-entry probability map (~330 MB of Parquet). Ran out of memory at the 128 MB limit when registration did not stream."""
    landed = land_large_run(tmp_path / "rows", "run1", 19_000)
    assert landed == 171_000 and REGISTER_MEMORY_LIMIT == "128MB"
    assert register_run(tmp_path, registration()) == landed
    con = duckdb.connect(str(tmp_path / "tooleval.duckdb"), read_only=True)
    try:
        assert con.execute("select count(*), count(distinct (arm, seed, request_id)) from landed_rows "
                           "where run_id = 'run1'").fetchall() == [(landed, landed)]
        assert con.execute("select min(cardinality(probabilities)), max(cardinality(probabilities)) "
                           "from landed_rows").fetchall() == [(200, 200)]
        assert con.execute("select n_rows from runs where run_id = 'run1'").fetchall() == [(landed,)]
    finally:
        con.close()
