"""Build known selection rows and the run records around them in a real DuckDB database (tables and views
from warehouse.tables / warehouse.views), so tests can assert what the project's views and functions
return on figures computed by hand or published elsewhere."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

import duckdb

from schemas.arrow import to_arrow_table
from schemas.rows import ArmRecord, ComparisonRecord, OfferedTool, RunRecord, SelectionRow, WeightRecord
from warehouse.tables import create_tables
from warehouse.views import create_views

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)
RUN = "run1"


def selection_row(request_id: str, expected: str, correct: bool | None = None, *, chosen: str | None = None,
                  arm: str = "base", rung: int = 1, seed: int = 1, slice_: str = "existing",
                  outcome: str | None = None, confidence: float | None = None, expected_position: int | None = 1,
                  n_tools: int = 4, run_id: str = RUN) -> dict[str, Any]:
    """One row; ``correct`` picks the chosen tool (expected, else 'other_tool') unless ``chosen`` is given."""
    if chosen is None:
        chosen = expected if correct else ("other_tool" if expected != "other_tool" else "none")
    if outcome is None:
        outcome = "correct" if chosen == expected else ("no_tool" if chosen == "none" else "wrong_tool")
    is_correct = outcome == "correct"
    failed = outcome in ("invalid", "error", "empty")
    return dict(
        run_id=run_id, experiment="known", arm=arm, rung=rung, seed=seed, taskset="known", taskset_version="v1",
        request_id=request_id, slice=slice_, intent=None, label_status="adjudicated", catalogue="c",
        tool_set_id="ts1", n_tools=n_tools, expected=expected,
        expected_position=None if expected == "none" else expected_position,
        chosen=None if failed else chosen, correct=is_correct, outcome=outcome,
        pair=f"{expected} -> {chosen}" if outcome in ("wrong_tool", "no_tool") else None,
        invalid=outcome == "invalid", error=outcome == "error", empty=outcome == "empty",
        confidence=confidence, probabilities=None, detail=None, input_tokens=None, output_tokens=None,
        cost_usd=None, latency_ms=1.0, model_id="m", served_model_id=None, selector="lexical", prompt="p",
        cache_hit=False, retries=0,
    )


def tool_rows(tool: str, n_requests: int, correct_per_request: list[int], *, seeds: int = 1, arm: str = "base",
              rung: int = 1, slice_: str = "existing", prefix: str | None = None) -> list[dict[str, Any]]:
    """Rows of ``n_requests`` requests labelled ``tool``: request i is right under its first
    ``correct_per_request[i]`` seeds (so 3 = right under every seed, 0 = never)."""
    assert len(correct_per_request) == n_requests
    prefix = prefix or tool
    return [selection_row(f"{prefix}-{i:03d}", tool, seed < k, arm=arm, rung=rung, seed=seed + 1, slice_=slice_)
            for i, k in enumerate(correct_per_request) for seed in range(seeds)]


class KnownRun:
    """A run in a DuckDB database: rows plus the runs, arms, comparisons, weights and tool-set records."""

    def __init__(self, path: Path | str = ":memory:", arms: Iterable[str] = ("base",),
                 comparisons: Iterable[tuple[str, str]] = (), weights: dict[str, float] | None = None,
                 criteria_hash: str | None = None, seeds: int = 1):
        self.con = duckdb.connect(str(path))
        create_tables(self.con)
        create_views(self.con)
        self.arms = list(arms)
        self.comparisons = list(comparisons)
        self.weights = weights
        self.criteria_hash = criteria_hash
        self.seeds = seeds
        self.rows: list[dict[str, Any]] = []
        self.arm_fields: dict[str, dict[str, Any]] = {}

    def add(self, rows: list[dict[str, Any]]) -> "KnownRun":
        self.rows += rows
        return self

    def arm_respects(self, arm: str, **fields: Any) -> "KnownRun":
        """Set catalogue_hash / prompt_hash / model_id / selector of an arm (for 2x2 tests)."""
        self.arm_fields[arm] = fields
        return self

    def _insert(self, table: str, model, records: list[dict[str, Any]]) -> None:
        if records:
            records = [model.model_validate(r).model_dump() for r in records]  # fields added later get defaults
            self.con.register("_incoming", to_arrow_table(model, records))
            self.con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _incoming")
            self.con.unregister("_incoming")

    def finish(self) -> duckdb.DuckDBPyConnection:
        self._insert("landed_rows", SelectionRow, self.rows)
        run = RunRecord(run_id=RUN, experiment="known", experiment_path="known.yaml", experiment_hash="h",
                        taskset="known", started_at=NOW, finished_at=NOW, n_rows=len(self.rows),
                        criteria_hash=self.criteria_hash, criteria_registered_at=NOW if self.criteria_hash else None,
                        weights_window="w" if self.weights else None, tooleval_version="test")
        self._insert("runs", RunRecord, [run.model_dump()])
        arms = []
        for rung, arm in enumerate(self.arms, start=1):
            fields = dict(catalogue_hash="cat", prompt_hash="prompt", model_id="m", selector="lexical")
            fields.update(self.arm_fields.get(arm, {}))
            arms.append(ArmRecord(run_id=RUN, arm=arm, rung=rung, catalogue="c", prompt="p", taskset_version="v1",
                                  taskset_hash="t", n_tools=4, seeds=list(range(1, self.seeds + 1)),
                                  **fields).model_dump())
        self._insert("arms", ArmRecord, arms)
        self._insert("comparisons", ComparisonRecord,
                     [ComparisonRecord(run_id=RUN, baseline=b, arm=a, changed=["catalogue"]).model_dump()
                      for b, a in self.comparisons])
        if self.weights:
            self._insert("production_weights", WeightRecord,
                         [WeightRecord(taskset="known", window_id="w", tool=t, weight=w).model_dump()
                          for t, w in self.weights.items()])
        tools = sorted({r["expected"] for r in self.rows} | {"other_tool"})
        self._insert("offered_tools", OfferedTool,
                     [OfferedTool(tool_set_id="ts1", tool=t).model_dump() for t in tools if t != "none"])
        return self.con


def one(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> dict[str, Any]:
    cursor = con.execute(sql, params or [])
    names = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    assert len(rows) == 1, f"expected one row, got {len(rows)}"
    return dict(zip(names, rows[0]))
