"""`tooleval validate EXPERIMENT_FILE`: every check a run makes before its first model call (the experiment's
arms and comparisons, its acceptance criteria, the task set and its label or task checks), with nothing
selected, run or written. The run itself makes the same checks (``prepare_run``), so an experiment this
passes is refused by no check a run makes before it starts."""

from __future__ import annotations

from pathlib import Path

from tasks.run.prepare_run import prepare_run
from tasks.surface.catalogue_drift import pinned_note
from tasks.surface.task_checks import TaskCheckReport
from tasks.taskset.check_cache import CheckReport


def validate_experiment_file(path: Path) -> list[str]:
    """The lines of a passed check of the experiment ``path``; InputError (naming the file, the arm or line and
    the rule) when a run would refuse it."""
    prepared = prepare_run(Path(path))
    experiment = prepared.experiment
    arms, seeds = experiment.arms, experiment.seeds
    lines = [f"OK {path}",
             f"  experiment {experiment.name}, task set {prepared.taskset}",
             f"  {len(arms)} arm(s) x {len(seeds)} seed(s): {prepared.planned_items:,} rows planned"]
    for arm in arms:
        lines.append(f"  arm {arm.name}: version {arm.version}")
    for version, report in sorted(prepared.checks.items()):
        first, *more = _checked(report)
        lines += [f"  {version}: {first}", *(f"    {line}" for line in more)]
    lines += surface_warnings(arms)
    note = pinned_note(arm.surface for arm in arms if getattr(arm, "surface", None) is not None)
    lines += [f"  {note}"] if note else []
    lines.append(f"  comparisons: {len(experiment.comparisons)}")
    if prepared.criteria is not None:
        criteria_path, criteria = prepared.criteria
        lines.append(f"  criteria: {len(criteria.gates)} gate(s) from {criteria_path.name} ({criteria.name})")
    else:
        lines.append("  criteria: none (the run reports, with no PASS or FAIL)")
    lines.append("nothing was run or written")
    return lines


def surface_warnings(arms: list) -> list[str]:
    """A warning line per surface the arms run that carries one (an MCP server without annotations)."""
    surfaces = {arm.surface.name: arm.surface for arm in arms if getattr(arm, "surface", None) is not None}
    return [f"  warning: surface {name}: {warning}" for name, surface in surfaces.items()
            for warning in surface.warnings]


def _checked(report: object) -> list[str]:
    if isinstance(report, CheckReport):
        return [f"{report.n_requests} requests" + (f", {report.n_weights} weights" if report.n_weights else "")
                + f": {report.n_expectations} label expectations passed",
                *(["(remembered: this content passed before)"] if report.cached else [])]
    if isinstance(report, TaskCheckReport):
        return [f"{report.n_tasks} tasks: {report.n_rules} rules passed on {report.n_surfaces} surface(s)"]
    return [str(report)]
