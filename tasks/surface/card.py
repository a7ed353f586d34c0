"""The surface instrument's card (tasks/instrument_card.py): its store in a warehouse, its row models and its
report reader, read by the core without importing the instrument."""

from __future__ import annotations

from pathlib import Path

from tasks.instrument_card import InstrumentCard, InstrumentStore


def row_models() -> dict:
    from schemas.run_records import ComparisonRecord
    from schemas.surface.rows import SurfaceArmRecord, SurfaceRunRecord, TaskCallRow, TaskRunRow

    return {"task_runs": TaskRunRow, "task_calls": TaskCallRow, "task_experiments": SurfaceRunRecord,
            "task_arms": SurfaceArmRecord, "task_comparisons": ComparisonRecord}


def trace_builder():
    from tasks.surface.surface_trace import emit_task_unit

    return emit_task_unit


def report_parts() -> tuple:
    from tasks.surface.figures import load_surface_figures
    from tasks.surface.tables import build_surface_report

    return load_surface_figures, build_surface_report


CARD = InstrumentCard(
    name="surface",
    store=InstrumentStore(
        run_table="task_experiments", arm_table="task_arms", comparison_table="task_comparisons",
        landed={"task_runs": "task_runs", "task_calls": "task_calls"},
        counts={"n_runs": "task_runs", "n_calls": "task_calls"}, cache_file="task_outcomes.sqlite"),
    row_models=row_models, report_parts=report_parts, run_kind="task run", report_command="tooleval tasks report",
    arm_marks=("surface", "agent"), views=Path(__file__).resolve().parent / "views",
    trace_builder=trace_builder)
