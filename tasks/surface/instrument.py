"""The task instrument: tasks done by an agent on a tool surface (seed 001), each a request, fixtures, an
outcome assertion and a budget, scored on the outcome; counted per call (invalid vs error vs retry) and per
tool, with the counters a redesign may make worse. What it says to the core (tasks/instruments.py) is
assembled here from its parts:

    arms.py           an arm: a surface (a toolkit through a transform) and the agent working on it
    load_tasks.py     a version's tasks and fixtures; task_checks.py the rules each must keep
    run_unit.py       a unit: the agent loop per task (agent_loop.py, execute_call.py, score_task.py), cached
                      outcomes, rows landed (``task_runs``, ``task_calls``)
    figures.py        the run's figures from the views, with their intervals
    gates.py          the gate kinds
    tables.py         the report's tables
"""

from __future__ import annotations

from typing import Any, Sequence

import duckdb

from schemas.surface.criteria import SurfaceCriteria
from schemas.surface.experiment import SURFACE_RESPECTS, SurfaceExperimentFile
from schemas.surface.rows import SurfaceArmRecord, SurfaceRunRecord
from tasks.instruments import Instrument, Words
from tasks.surface.gates import JUDGES


class Surface(Instrument):
    name = "surface"
    experiment_file = SurfaceExperimentFile
    criteria_file = SurfaceCriteria
    respects = SURFACE_RESPECTS
    arm_fields = ("surface", "prompt", "agent", "model")
    words = Words(items="task runs", ok="succeeded", failed="stopped on a provider error or the run's budget")
    run_record = SurfaceRunRecord
    judges = JUDGES

    def fill_arm(self, merged: dict[str, Any]) -> None:
        from tasks.surface.arms import fill_surface_arm

        fill_surface_arm(merged)

    def resolve_arm(self, name, rung, merged, context):
        from tasks.surface.arms import resolve_surface_arm

        return resolve_surface_arm(name, rung, merged, context)

    def load(self, experiment):
        """Each version's tasks, checked against every surface the arms run them on."""
        from tasks.run.prepare_run import Loaded
        from tasks.surface.load_tasks import load_task_version
        from tasks.surface.task_checks import check_tasks

        versions, checks = {}, {}
        for version in experiment.versions:
            versions[version] = load_task_version(experiment.taskset_dir, version)
            surfaces = {a.surface.name: a.surface for a in experiment.arms if a.version == version}
            checks[version] = check_tasks(versions[version], surfaces.values())
        return Loaded(versions=versions, checks=checks)

    def work_items(self, version) -> Sequence[Any]:
        from tasks.surface.run_unit import TaskInput

        return tuple(TaskInput(task, version.fixtures(task)) for task in version.tasks)

    def run_unit(self, unit, ctx):
        from tasks.surface.run_unit import run_task_unit

        return run_task_unit(unit, ctx)

    def arm_record(self, arm, common) -> SurfaceArmRecord:
        return SurfaceArmRecord(**common, surface=arm.surface.name, surface_hash=arm.surface.surface_hash,
                                agent=arm.agent, agent_options_hash=arm.agent_options_hash,
                                reads_prompt=arm.reads_prompt, n_tools=len(arm.surface.tools))

    def load_figures(self, con: duckdb.DuckDBPyConnection, run_id: str):
        from tasks.surface.figures import load_surface_figures

        return load_surface_figures(con, run_id)

    def build_report(self, figures, verdict):
        from tasks.surface.tables import build_surface_report

        return build_surface_report(figures, verdict)


INSTRUMENT = Surface()
