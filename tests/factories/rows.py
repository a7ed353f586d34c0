"""Selection rows and the run records around them, in a real in-memory DuckDB database (the project's
tables and views), so tests assert what the views and the functions over them return on figures computed
by hand or published elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import duckdb
from pydantic import BaseModel

from schemas.arrow import to_arrow_table
from schemas.run_records import ComparisonRecord
from schemas.selection.rows import (
    OfferedTool,
    SelectionArmRecord,
    SelectionRow,
    SelectionRunRecord,
    WeightRecord,
)
from warehouse import query
from tests.factories import NOW
from warehouse.tables import create_tables
from warehouse.views import create_views

RUN = "run1"
FAILED = ("invalid", "error", "empty")


def selection_row(request_id: str, expected: str, correct: bool | None = None, *, chosen: str | None = None,
                  outcome: str | None = None, arm: str = "base", rung: int = 1, seed: int = 1,
                  slice_: str = "existing", expected_position: int | None = 1, **fields: Any) -> dict[str, Any]:
    """One row (SelectionRow fields). The answer is ``chosen`` when given, else from ``correct`` (the
    expected tool, else 'other_tool'); the outcome follows from it unless given. A failed row (invalid,
    error, empty) chose nothing unless ``chosen`` says otherwise. ``fields`` override any column."""
    if chosen is None and outcome not in FAILED:
        chosen = expected if correct else ("other_tool" if expected != "other_tool" else "none")
    if outcome is None:
        outcome = "correct" if chosen == expected else ("no_tool" if chosen == "none" else "wrong_tool")
    row = dict(
        run_id=RUN, experiment="known", arm=arm, rung=rung, seed=seed, taskset="known", taskset_version="v1",
        request_id=request_id, slice=slice_, intent=None, label_status="adjudicated", catalogue="c",
        tool_set_id="ts1", n_tools=4, expected=expected,
        expected_position=None if expected == "none" else expected_position,
        chosen=chosen, correct=outcome == "correct", outcome=outcome,
        pair=f"{expected} -> {chosen}" if outcome in ("wrong_tool", "no_tool") else None,
        invalid=outcome == "invalid", error=outcome == "error", empty=outcome == "empty",
        confidence=None, probabilities=None, detail=None, input_tokens=None, output_tokens=None,
        cost_usd=None, latency_ms=1.0, model_id="m", served_model_id=None, selector="lexical", prompt="p",
        cache_hit=False, retries=0,
    )
    row.update(fields)
    return row


def tool_rows(tool: str, n_requests: int, correct_per_request: list[int], *, seeds: int = 1, arm: str = "base",
              rung: int = 1, slice_: str = "existing", prefix: str | None = None) -> list[dict[str, Any]]:
    """Rows of ``n_requests`` requests labelled ``tool``: request i is right under its first
    ``correct_per_request[i]`` seeds (so 3 = right under every seed, 0 = never)."""
    assert len(correct_per_request) == n_requests
    prefix = prefix or tool
    return [selection_row(f"{prefix}-{i:03d}", tool, seed < k, arm=arm, rung=rung, seed=seed + 1, slice_=slice_)
            for i, k in enumerate(correct_per_request) for seed in range(seeds)]


def memory_warehouse(path: Path | str = ":memory:") -> duckdb.DuckDBPyConnection:
    """A DuckDB database with the project's tables and views and no rows."""
    con = duckdb.connect(str(path))
    create_tables(con)
    create_views(con)
    return con


def insert(con: duckdb.DuckDBPyConnection, table: str, model: type[BaseModel], records: list[dict[str, Any]]) -> None:
    """Validate records against their schema (fields added later get defaults) and insert them by name."""
    if records:
        records = [model.model_validate(r).model_dump() for r in records]
        con.register("_incoming", to_arrow_table(model, records))
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
        con.unregister("_incoming")


def run_record(n_rows: int, *, run_id: str = RUN, experiment: str = "known", taskset: str = "known",
               criteria_hash: str | None = None, weights_window: str | None = None) -> dict[str, Any]:
    return dict(run_id=run_id, experiment=experiment, experiment_path=f"{experiment}.yaml", experiment_hash="h",
                taskset=taskset, started_at=NOW, finished_at=NOW, n_rows=n_rows, criteria_hash=criteria_hash,
                criteria_registered_at=NOW if criteria_hash else None, weights_window=weights_window,
                tooleval_version="test")


class KnownRun:
    """A run in a DuckDB database: rows plus the runs, arms, comparisons, weights and tool-set records."""

    def __init__(self, path: Path | str = ":memory:", arms: Iterable[str] = ("base",),
                 comparisons: Iterable[tuple[str, str] | tuple[str, str, list[str]]] = (),
                 weights: dict[str, float] | None = None, criteria_hash: str | None = None, seeds: int = 1):
        self.con = memory_warehouse(path)
        self.arms = list(arms)
        self.comparisons = list(comparisons)
        """(baseline, arm) pairs, or (baseline, arm, changed respects); changed defaults to the catalogue."""
        self.weights = weights
        self.criteria_hash = criteria_hash
        self.seeds = seeds
        self.rows: list[dict[str, Any]] = []
        self.arm_fields: dict[str, dict[str, Any]] = {}

    def add(self, rows: list[dict[str, Any]]) -> "KnownRun":
        self.rows += rows
        return self

    def arm_respects(self, arm: str, **fields: Any) -> "KnownRun":
        """Set SelectionArmRecord fields of an arm (catalogue_hash, prompt_hash, model_id, selector, taskset_version...)."""
        self.arm_fields[arm] = fields
        return self

    def finish(self) -> duckdb.DuckDBPyConnection:
        insert(self.con, "landed_rows", SelectionRow, self.rows)
        insert(self.con, "runs", SelectionRunRecord, [run_record(len(self.rows), criteria_hash=self.criteria_hash,
                                                        weights_window="w" if self.weights else None)])
        arms = []
        for rung, arm in enumerate(self.arms, start=1):
            fields = dict(run_id=RUN, arm=arm, rung=rung, catalogue="c", prompt="p", taskset_version="v1",
                          taskset_hash="t", n_tools=4, seeds=list(range(1, self.seeds + 1)), catalogue_hash="cat",
                          prompt_hash="prompt", model_id="m", selector="lexical")
            arms.append({**fields, **self.arm_fields.get(arm, {})})
        insert(self.con, "arms", SelectionArmRecord, arms)
        insert(self.con, "comparisons", ComparisonRecord,
               [dict(run_id=RUN, baseline=c[0], arm=c[1], changed=c[2] if len(c) > 2 else ["catalogue"])
                for c in self.comparisons])
        if self.weights:
            insert(self.con, "production_weights", WeightRecord,
                   [dict(taskset="known", window_id="w", tool=t, weight=w) for t, w in self.weights.items()])
        tools = sorted({r["expected"] for r in self.rows} | {"other_tool"})
        insert(self.con, "offered_tools", OfferedTool, [dict(tool_set_id="ts1", tool=t) for t in tools if t != "none"])
        return self.con


TASK_RUN = "20261201T000000Z-task"


def warehouse_with_a_task_run(folder: Path) -> Path:
    """``folder/wh`` holding a selection run (RUN: two refund rows) and a task run's record (TASK_RUN), made
    without Prefect: what a command given the other instrument's run id is tried on."""
    from schemas.surface.rows import SurfaceRunRecord

    warehouse = folder / "wh"
    warehouse.mkdir()
    con = KnownRun(warehouse / "tooleval.duckdb").add(tool_rows("refund", 2, [1, 0])).finish()
    record = {k: v for k, v in run_record(0, run_id=TASK_RUN).items() if k not in ("n_rows", "weights_window")}
    insert(con, "task_experiments", SurfaceRunRecord, [dict(record, n_runs=0, n_calls=0)])
    con.close()
    return warehouse


def records(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    """The result of a query as dicts (the report's reader, parameters optional)."""
    return query.records(con, sql, params or [])


def one(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> dict[str, Any]:
    rows = records(con, sql, params)
    assert len(rows) == 1, f"expected one row, got {len(rows)}"
    return rows[0]
