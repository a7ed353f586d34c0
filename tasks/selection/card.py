"""The selection instrument's card (tasks/instrument_card.py): its store in a warehouse, its row models and
its report reader, read by the core without importing the instrument."""

from __future__ import annotations

from pathlib import Path

from tasks.instrument_card import InstrumentCard, InstrumentStore


def row_models() -> dict:
    from schemas.run_records import ComparisonRecord
    from schemas.selection.forecast import CostForecast
    from schemas.selection.rows import (
        OfferedTool,
        SeedOrder,
        SelectionArmRecord,
        SelectionRow,
        SelectionRunRecord,
        WeightRecord,
    )

    return {"landed_rows": SelectionRow, "runs": SelectionRunRecord, "arms": SelectionArmRecord,
            "comparisons": ComparisonRecord, "seed_orders": SeedOrder, "offered_tools": OfferedTool,
            "production_weights": WeightRecord, "cost_forecasts": CostForecast}


def trace_builder():
    from tasks.selection.selection_trace import emit_selection_unit

    return emit_selection_unit


def report_parts() -> tuple:
    from tasks.selection.figures import load_figures
    from tasks.selection.tables import build_report_from

    return load_figures, build_report_from


CARD = InstrumentCard(
    name="selection",
    store=InstrumentStore(
        run_table="runs", arm_table="arms", comparison_table="comparisons", landed={"landed_rows": "rows"},
        counts={"n_rows": "landed_rows"}, cache_file="selections.sqlite", records=("seed_orders", "cost_forecasts"),
        shared={"offered_tools": ("tool_set_id",), "production_weights": ("taskset", "window_id")}),
    row_models=row_models, report_parts=report_parts, run_kind="selection run", report_command="tooleval report",
    arm_marks=("catalogue", "selector"), views=Path(__file__).resolve().parent / "views",
    trace_builder=trace_builder)
