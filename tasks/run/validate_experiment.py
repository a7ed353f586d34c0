"""`tooleval validate EXPERIMENT_FILE`: every check a run makes before its first model call (the experiment's
arms and comparisons, its acceptance criteria, the task set and its label or task checks), with nothing
selected, run or written. The run itself makes the same checks (``prepare_run``), so an experiment this
passes is refused by no check a run makes before it starts. A pass is remembered by every file it read
(tasks/files/remembered_pass.py): the same experiment, task set, catalogues and tooleval answer at once."""

from __future__ import annotations

from pathlib import Path

from tasks.files.remembered_pass import remembered


def validate_experiment_file(path: Path) -> list[str]:
    """The lines of a passed check of the experiment ``path`` (or of its remembered pass); InputError (naming
    the file, the arm or line and the rule) when a run would refuse it."""
    return remembered("validate", [str(path)], lambda: checked_experiment_lines(path))


def checked_experiment_lines(path: Path) -> list[str]:
    """The lines of a pass of every check a run makes on the experiment ``path``, all of them run."""
    from tasks.run.prepare_run import prepare_run

    prepared = prepare_run(Path(path))
    experiment = prepared.experiment
    arms, seeds = experiment.arms, experiment.seeds
    lines = [f"OK {path}", *([f"  note: {experiment.instrument_note}"] if experiment.instrument_note else []),
             f"  experiment {experiment.name}, task set {prepared.taskset}",
             f"  {len(arms)} arm(s) x {len(seeds)} seed(s): {prepared.planned_items:,} rows planned"]
    for arm in arms:
        lines.append(f"  arm {arm.name}: version {arm.version}")
    kind = prepared.instrument
    for version, report in sorted(prepared.checks.items()):
        first, *more = kind.check_lines(report)
        lines += [f"  {version}: {first}", *(f"    {line}" for line in more)]
    lines += kind.validate_notes(arms)
    lines.append(f"  comparisons: {len(experiment.comparisons)}")
    if prepared.criteria is not None:
        criteria_path, criteria = prepared.criteria
        lines.append(f"  criteria: {len(criteria.gates)} gate(s) from {criteria_path.name} ({criteria.name})")
    else:
        lines.append("  criteria: none (the run reports, with no PASS or FAIL)")
    lines.append("nothing was run or written")
    return lines
