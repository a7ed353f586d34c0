"""Known task runs and calls in a real DuckDB database (tables and views from warehouse/), so tests can
check the views and the report against figures computed by hand or published elsewhere."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import duckdb

from schemas.arrow import to_arrow_table
from schemas.run_records import ComparisonRecord
from schemas.surface.rows import SurfaceArmRecord, SurfaceRunRecord, TaskCallRow, TaskRunRow
from warehouse.tables import create_tables
from warehouse.views import create_views

RUN = "run1"
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)


def run_row(task_id: str, *, arm: str = "A", rung: int = 1, seed: int = 1, success: bool = False,
            slice_: str = "s", intent: str | None = None, first_tool: str | None = None, irreversible: int = 0,
            reads: int = 0, handed: bool = False, stop: str = "model_stop", n_calls: int = 0,
            unwanted: int | None = None, unwanted_reads: int | None = None, declares: bool = False,
            input_tokens: int | None = None, output_tokens: int | None = None, cost_usd: float | None = None,
            n_turns: int = 1, taskset_version: str = "t1") -> dict[str, Any]:
    """``unwanted`` / ``unwanted_reads`` default to what a task declaring nothing gives: all of the run's
    irreversible actions (reads) when it failed, none when it succeeded."""
    unwanted = (0 if success else irreversible) if unwanted is None else unwanted
    unwanted_reads = (0 if success else reads) if unwanted_reads is None else unwanted_reads
    return dict(run_id=RUN, experiment="known", arm=arm, rung=rung, seed=seed, taskset="known",
                taskset_version=taskset_version,
                task_id=task_id, slice=slice_, intent=intent, surface="s", prompt="p", model_id="m", agent="baseline",
                reads_prompt=False, tool_order=[], success=success, failed_assertions=[], stop_reason=stop, detail=None,
                n_turns=n_turns, n_calls=n_calls, invalid_calls=0, text_calls=0, error_calls=0, retries=0,
                irreversible_actions=irreversible, upstream_reads=reads, irreversible_unwanted=unwanted,
                upstream_reads_unwanted=unwanted_reads, declares_actions=declares, handed_to_human=handed,
                first_tool=first_tool, final_reply=None, input_tokens=input_tokens, output_tokens=output_tokens,
                cost_usd=cost_usd, price_version=None, wall_ms=1.0, agent_ms=0.0,
                provider_retries=0, served_model_id=None, cache_hit=False)


def call_row(task_id: str, name: str, index: int, *, arm: str = "A", seed: int = 1, valid: bool = True,
             error: bool = False, retry: bool = False, reads: int = 0, skipped: bool = False,
             intent: str | None = None) -> dict[str, Any]:
    return dict(run_id=RUN, arm=arm, seed=seed, taskset_version="t1", task_id=task_id, slice="s", intent=intent,
                call_index=index, turn=index, name=name, tool=name, arguments="{}", valid=valid and not skipped,
                invalid_reason=None if valid else "breaks the schema", executed=valid and not skipped,
                error=error, error_detail=None, result_chars=2, result_records=None, is_retry=retry,
                irreversible=False, handoff=False, upstream_reads=reads, backend_ms=0.0, skipped_budget=skipped,
                wanted=True, wanted_by="outcome")


class KnownTaskRun:
    def __init__(self, arms: dict[str, dict[str, Any]] | None = None,
                 comparisons: list[tuple[str, str, list[str]]] = ()):
        self.con = duckdb.connect(":memory:")
        create_tables(self.con)
        create_views(self.con)
        self.runs: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        self.arms = arms or {"A": {}}
        self.comparisons = comparisons

    def finish(self) -> duckdb.DuckDBPyConnection:
        for table, model, rows in (("task_runs", TaskRunRow, self.runs), ("task_calls", TaskCallRow, self.calls)):
            if rows:
                self.con.register("_rows", to_arrow_table(model, rows))
                self.con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _rows")
                self.con.unregister("_rows")
        records = [("task_experiments", SurfaceRunRecord, [dict(
            run_id=RUN, experiment="known", experiment_path="x.yaml", experiment_hash="h", taskset="known",
            started_at=NOW, finished_at=NOW, n_runs=len(self.runs), n_calls=len(self.calls), criteria_hash=None,
            criteria_registered_at=None, tooleval_version="test")])]
        records.append(("task_arms", SurfaceArmRecord, [dict(
            run_id=RUN, arm=name, rung=rung, surface=respects.get("surface", "legacy"),
            surface_hash=respects.get("surface_hash", "s0"), prompt="p", prompt_hash=respects.get("prompt_hash", "p0"),
            model_id="m", agent="baseline", agent_options_hash="o", reads_prompt=respects.get("reads_prompt", True),
            taskset_version="t1", taskset_hash="th", n_tools=8, seeds=[1])
            for rung, (name, respects) in enumerate(self.arms.items(), start=1)]))
        records.append(("task_comparisons", ComparisonRecord, [dict(run_id=RUN, baseline=a, arm=b, changed=changed)
                                                                   for a, b, changed in self.comparisons]))
        for table, model, rows in records:
            if rows:
                self.con.register("_rows", to_arrow_table(model, rows))
                self.con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _rows")
                self.con.unregister("_rows")
        return self.con


def spread_calls(tool: str, calls: int, invalid: int, runs: int, *, retries: int = 0, arm: str = "A",
                 offset: int = 0) -> list[dict[str, Any]]:
    """``calls`` calls of ``tool`` over the first ``runs`` tasks (round robin), the first ``invalid`` invalid."""
    return [call_row(f"t{(i % runs) + offset:03d}", tool, 100 + i, arm=arm, valid=i >= invalid, retry=i < retries)
            for i in range(calls)]
