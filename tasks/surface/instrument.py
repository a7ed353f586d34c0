"""The surface instrument: tasks done by an agent on a tool surface, each a request, fixtures, an
outcome assertion and a budget, scored on the outcome; counted per call (invalid vs error vs retry) and per
tool, with the counters a redesign may make worse. What it says to the core (tasks/instrument_api.py), each
part from its own module:

    card.py           its store in a warehouse, row models and report reader, read without importing it
    arms.py           an arm: a surface (a toolkit or MCP servers, through a transform) and the agent on it
    load_tasks.py     a version's tasks and fixtures, checked against the arms' surfaces (task_checks.py)
    run_unit.py       a unit: the agent loop per task (agent_loop.py, execute_call.py, score_task.py), cached
                      outcomes, rows landed (``task_runs``, ``task_calls``)
    figures.py        the run's figures from the views, with their intervals
    gates.py          the gate kinds
    tables.py         the report's tables
"""

from __future__ import annotations

from typing import Sequence

from schemas.surface.criteria import SurfaceCriteria
from schemas.surface.experiment import SURFACE_RESPECTS, SurfaceExperimentFile
from schemas.surface.rows import SurfaceRunRecord
from tasks.instrument_api import Instrument, Words, on_call
from tasks.selectors.providers.pinned_models import arm_unpinned
from tasks.surface.arms import SurfaceArm, arm_record, fill_surface_arm, resolve_surface_arm
from tasks.surface.card import CARD
from tasks.surface.catalogue_drift import check_pinned_servers, pinned_note
from tasks.surface.gates import JUDGES, task_runs_not_carried_out
from tasks.surface.task_checks import TaskCheckReport, load_surface_versions


def task_check_lines(report: TaskCheckReport) -> list[str]:
    return [f"{report.n_tasks} tasks: {report.n_rules} rules passed on {report.n_surfaces} surface(s)",
            *(["(remembered: this content passed before)"] if report.cached else [])]


def surface_notes(arms: Sequence[SurfaceArm]) -> list[str]:
    """What ``tooleval validate`` says of the arms' surfaces: a warning line per surface that carries one (an
    MCP server without annotations), then which MCP servers are pinned to a catalogue."""
    surfaces = {arm.surface.name: arm.surface for arm in arms}
    lines = [f"  warning: surface {name}: {warning}" for name, surface in surfaces.items()
             for warning in surface.warnings]
    note = pinned_note(arm.surface for arm in arms)
    return lines + ([f"  {note}"] if note else [])


INSTRUMENT = Instrument(
    name="surface", card=CARD, experiment_file=SurfaceExperimentFile, criteria_file=SurfaceCriteria,
    respects=SURFACE_RESPECTS,
    arm_fields=("surface", "prompt", "agent", "model"), fill_arm=fill_surface_arm, run_record=SurfaceRunRecord,
    words=Words(items="task runs", ok="succeeded", failed="could not be carried out (provider, budget, surface)",
                counted="runs", doing="running tasks"),
    resolve_arm=resolve_surface_arm, load=load_surface_versions, item_count=lambda version: len(version.tasks),
    work_items=on_call("tasks.surface.run_unit", "task_inputs"),
    run_unit=on_call("tasks.surface.run_unit", "run_task_unit"), arm_record=arm_record,
    load_figures=on_call("tasks.surface.figures", "load_surface_figures"), judges=JUDGES,
    build_report=on_call("tasks.surface.tables", "build_surface_report"),
    units_done=on_call("tasks.surface.run_unit", "units_done"), not_carried_out=task_runs_not_carried_out,
    check_before_run=check_pinned_servers, check_lines=task_check_lines, validate_notes=surface_notes,
    unpinned=arm_unpinned, spent=on_call("tasks.selectors.providers.call_budget", "spent_in_run"))
