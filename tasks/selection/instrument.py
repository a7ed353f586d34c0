"""The selection instrument: which tool a model (or a router) picks for each labelled request of a frozen
task-set version, per tool, per confused pair and weighted by production traffic (routers with a
confidence gate among the selectors). What it says to the core (tasks/instrument_api.py), each part from its own module:

    arms.py           an arm: a catalogue and a selector with its pinned model (router cut-offs settled)
    versions.py       a version's labelled requests: loaded, label-checked, never scored by a model that saw them
    plan_batch.py     a unit's batch as its arm and seed see it: tools in the seed's order, labels, cache keys
    card.py           its store in a warehouse, row models and report reader, read without importing it
    select_batch.py   a unit: cached selections, fresh ones for the rest, scored rows landed (``landed_rows``)
    records.py        arms, seed orders, offered tool sets and weights, registered beside the rows
    cost_forecast.py  what a run will cost before its first call (registered as ``cost_forecasts``)
    figures.py        the run's figures from the views, with their intervals
    gates.py          the gate kinds
    tables.py         the report's tables and charts
"""

from __future__ import annotations

from schemas.selection.criteria import SelectionCriteria
from schemas.selection.experiment import RESPECTS, SelectionExperimentFile
from schemas.selection.rows import SelectionRunRecord
from tasks.instrument_api import Instrument, Words, on_call
from tasks.selection.arms import resolve_selection_arm
from tasks.selection.card import CARD
from tasks.selection.gates import JUDGES, rows_not_carried_out
from tasks.selection.map_entries import probability_map_entries
from tasks.selection.plan_batch import request_batches
from tasks.selection.records import arm_record, selection_records, weights_window
from tasks.selection.validate_lines import label_check_lines
from tasks.selection.versions import check_selection_labels, load_selection_versions, refuse_provisional_labels
from tasks.selectors.providers.pinned_models import arm_unpinned


INSTRUMENT = Instrument(
    name="selection", card=CARD, experiment_file=SelectionExperimentFile, criteria_file=SelectionCriteria,
    respects=RESPECTS,
    arm_fields=("catalogue", "prompt", "model", "selector"), run_record=SelectionRunRecord,
    words=Words(items="rows", ok="correct", failed="invalid/error/empty"),
    resolve_arm=resolve_selection_arm, load=load_selection_versions, check_loaded=check_selection_labels,
    check_before_run=refuse_provisional_labels,
    work_items=request_batches, item_count=lambda version: len(version.requests),
    run_unit=on_call("tasks.selection.select_batch", "select_and_land"), arm_record=arm_record,
    records=selection_records, run_fields=weights_window, judges=JUDGES,
    load_figures=on_call("tasks.selection.figures", "load_figures"),
    build_report=on_call("tasks.selection.tables", "build_report_from"),
    not_carried_out=rows_not_carried_out, check_lines=label_check_lines,
    extra_disk_entries=probability_map_entries,
    unpinned=arm_unpinned, spent=on_call("tasks.selectors.providers.call_budget", "spent_in_run"),
    forecast=on_call("tasks.selection.cost_forecast", "forecast_run"), sends_batches=True)
