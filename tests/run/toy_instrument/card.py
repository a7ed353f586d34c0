"""The toy instrument's card: its store, row models and report reader."""

from __future__ import annotations

from pathlib import Path

from tasks.instrument_card import InstrumentCard, InstrumentStore


def row_models() -> dict:
    from schemas.run_records import ComparisonRecord
    from tests.run.toy_instrument.parts import ToyArmRecord, ToyRow, ToyRunRecord

    return {"toy_rows": ToyRow, "toy_runs": ToyRunRecord, "toy_arms": ToyArmRecord,
            "toy_comparisons": ComparisonRecord}


def report_parts() -> tuple:
    from tests.run.toy_instrument.parts import build_toy_report, load_toy_figures

    return load_toy_figures, build_toy_report


CARD = InstrumentCard(
    name="toy", store=InstrumentStore(run_table="toy_runs", arm_table="toy_arms", comparison_table="toy_comparisons",
                                      landed={"toy_rows": "toy_rows"}, counts={"n_rows": "toy_rows"},
                                      cache_file="toy.sqlite"),
    row_models=row_models, report_parts=report_parts, run_kind="toy run", report_command="tooleval report",
    arm_marks=("rule",), views=Path(__file__).resolve().parent / "views")
