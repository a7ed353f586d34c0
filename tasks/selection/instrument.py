"""The selection instrument: which tool a model (or a router) picks for each labelled request of a frozen
task-set version, per tool, per confused pair and weighted by production traffic (seed 000; routers with a
confidence gate: seed 004). What it says to the core (tasks/instruments.py) is assembled here from its parts:

    arms.py           an arm: a catalogue and a selector with its pinned model (router cut-offs settled)
    versions.py       a version's labelled requests: loaded, label-checked, never scored by a model that saw them
    plan_batch.py     a unit's batch as its arm and seed see it: tools in the seed's order, labels, cache keys
    select_batch.py   a unit: cached selections, fresh ones for the rest, scored rows landed (``landed_rows``)
    records.py        arms, seed orders, offered tool sets and weights, registered beside the rows
    figures.py        the run's figures from the views, with their intervals
    gates.py          the gate kinds
    tables.py         the report's tables and charts
"""

from __future__ import annotations

from typing import Any, Sequence

import duckdb

from schemas.selection.criteria import SelectionCriteria
from schemas.selection.experiment import RESPECTS, SelectionExperimentFile
from schemas.selection.rows import SelectionArmRecord, SelectionRunRecord
from tasks.instruments import Instrument, Words
from tasks.selection.gates import JUDGES


class Selection(Instrument):
    name = "selection"
    experiment_file = SelectionExperimentFile
    criteria_file = SelectionCriteria
    respects = RESPECTS
    arm_fields = ("catalogue", "prompt", "model", "selector")
    words = Words(items="rows", ok="correct", failed="invalid/error/empty")
    run_record = SelectionRunRecord
    judges = JUDGES

    def resolve_arm(self, name, rung, merged, context):
        from tasks.selection.arms import resolve_selection_arm

        return resolve_selection_arm(name, rung, merged, context)

    def load(self, experiment):
        from tasks.selection.versions import load_selection_versions

        return load_selection_versions(experiment)

    def check_before_run(self, prepared, allow_provisional: bool) -> None:
        from tasks.taskset.provisional_labels import refuse_provisional

        refuse_provisional(prepared.versions, allow_provisional)

    def work_items(self, version) -> Sequence[Any]:
        from tasks.selection.plan_batch import BATCH_COLUMNS

        return version.table.select(BATCH_COLUMNS)

    def run_unit(self, unit, ctx):
        from tasks.selection.select_batch import select_and_land

        return select_and_land(unit, ctx)

    def arm_record(self, arm, common) -> SelectionArmRecord:
        from tasks.selection.records import arm_record

        return arm_record(arm, common)

    def records(self, prepared, units, run_id):
        from tasks.selection.records import selection_records

        return selection_records(prepared, units, run_id)

    def run_fields(self, prepared) -> dict[str, Any]:
        return {"weights_window": prepared.weights.window if prepared.weights else None}

    def load_figures(self, con: duckdb.DuckDBPyConnection, run_id: str):
        from tasks.selection.figures import load_figures

        return load_figures(con, run_id)

    def build_report(self, figures, verdict):
        from tasks.selection.tables import build_report_from

        return build_report_from(figures, verdict)


INSTRUMENT = Selection()
