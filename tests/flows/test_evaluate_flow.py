"""The evaluate flow end to end through Prefect, a real DuckDB file and real Parquet."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from flows.evaluate import evaluate
from schemas.arrow import arrow_schema
from schemas.selection.rows import SelectionRow
from tasks.selectors import offline
from tests.factories import SUPPORT

LADDER = SUPPORT / "experiments" / "ladder.yaml"
VIEWS = ["selection_rows", "aggregate_accuracy", "per_tool_accuracy", "confused_pairs", "weighted_accuracy"]


@pytest.fixture(scope="module")
def demo_run(prefect_harness, tmp_path_factory):
    """The bundled demo (4 rungs x 3 seeds x 540 requests) into a fresh warehouse."""
    warehouse = tmp_path_factory.mktemp("warehouse")
    summary = evaluate(experiment_path=str(LADDER), warehouse_dir=str(warehouse))
    return summary, warehouse


def test_the_demo_lands_6480_rows_and_every_view_answers(demo_run):
    summary, warehouse = demo_run
    assert summary.n_rows == 6480 == 4 * 3 * 540
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    counts = {view: con.execute(f"select count(*) from {view} where run_id = ?", [summary.run_id]).fetchall()[0][0]
              for view in VIEWS}
    assert counts["selection_rows"] == 6480
    assert counts["aggregate_accuracy"] == 4 * 2  # four rungs x two slices, never one mixed figure
    assert counts["weighted_accuracy"] == 4
    assert counts["per_tool_accuracy"] > 30 and counts["confused_pairs"] > 0
    per_request = con.execute("""select count(*) from (select run_id, arm, seed, request_id from selection_rows
                                  group by all having count(*) > 1)""").fetchall()[0][0]
    assert per_request == 0
    seeds = con.execute("select count(distinct seed), count(distinct arm) from selection_rows").fetchall()[0]
    assert seeds == (3, 4)
    # the permutation of each seed is recorded, and the expected tool's position agrees with it
    mismatched = con.execute("""
        select count(*) from selection_rows r join seed_orders o
          on o.run_id = r.run_id and o.arm = r.arm and o.seed = r.seed and o.tool = r.expected
        where r.expected_position <> o.position""").fetchall()[0][0]
    assert mismatched == 0
    con.close()


def test_landed_parquet_matches_the_pydantic_model(demo_run):
    summary, warehouse = demo_run
    files = sorted((warehouse / "rows" / f"run_id={summary.run_id}").rglob("*.parquet"))
    assert len(files) == summary.n_units == 4 * 3 * 3
    for path in files[:3]:
        assert pq.read_schema(path).remove_metadata() == arrow_schema(SelectionRow).remove_metadata()
    assert not list(warehouse.rglob(".tmp-*"))


def test_report_files_are_written(demo_run):
    summary, _ = demo_run
    html = Path(summary.reports["html"]).read_text()
    assert "<table" in html and "http://" not in html and "https://" not in html
    assert "giftcards-30" in Path(summary.reports["markdown"]).read_text()


def test_an_unchanged_rerun_makes_no_selector_call_and_duplicates_nothing(demo_run, monkeypatch):
    summary, warehouse = demo_run

    def no_calls(*args, **kwargs):
        raise AssertionError("a selector was built: the rerun should have come entirely from the cache")

    monkeypatch.setattr(offline, "_built", no_calls)  # the lexical, embedding and trained selectors
    again = evaluate(experiment_path=str(LADDER), warehouse_dir=str(warehouse))
    assert again.n_cache_hits == 6480 and again.run_id != summary.run_id
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    by_run = dict(con.execute("select run_id, count(*) from selection_rows group by run_id").fetchall())
    assert by_run == {summary.run_id: 6480, again.run_id: 6480}
    hits = con.execute("select bool_and(cache_hit) from selection_rows where run_id = ?", [again.run_id]).fetchall()
    assert hits == [(True,)]
    # same answers as the first run, row for row
    differing = con.execute("""
        select count(*) from selection_rows a join selection_rows b
          using (arm, seed, request_id)
        where a.run_id = ? and b.run_id = ? and a.chosen is distinct from b.chosen""",
        [summary.run_id, again.run_id]).fetchall()[0][0]
    assert differing == 0
    con.close()
