"""`tooleval validate EXPERIMENT_FILE`: every check a run makes before its first model call (the experiment's
arms and comparisons, its acceptance criteria, the task set and its label or task checks), with nothing
selected, run or written. The run itself makes the same checks (``prepare_run``), so an experiment this
passes is refused by no check a run makes before it starts. A pass is remembered by every file it read
(tasks/files/remembered_pass.py): the same experiment, task set, catalogues and tooleval answer at once.

An experiment with paid calls also gets what it will cost (``Instrument.forecast``), from a warehouse's
history where it has one: worked out anew each time (that history is not a file the pass remembers), in
place of the mark its remembered lines keep."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tasks.files.remembered_pass import remembered

if TYPE_CHECKING:
    from tasks.instrument_api import PreparedRun


FORECAST_MARK = "  (cost forecast)"
"""Where a check's lines take the experiment's cost forecast (an experiment with paid calls)."""


def validate_experiment_file(path: Path, warehouse: str | Path | None = None) -> list[str]:
    """The lines of a passed check of the experiment ``path`` (or of its remembered pass), with its cost
    forecast from the past rows of ``warehouse`` (default: $TOOLEVAL_WAREHOUSE, else the checkout's);
    InputError (naming the file, the arm or line and the rule) when a run would refuse it."""
    kept: dict[str, PreparedRun] = {}
    lines = remembered("validate", [str(path)], lambda: checked_experiment_lines(path, kept))
    if FORECAST_MARK not in lines:
        return lines
    from tasks.run.prepare_run import prepare_run
    from warehouse.location import warehouse_at

    prepared = kept.get("prepared") or prepare_run(Path(path), checked=False)
    forecast = prepared.instrument.forecast(prepared, warehouse_at(warehouse).root).lines()
    at = lines.index(FORECAST_MARK)
    return [*lines[:at], *(f"  {line}" for line in forecast), *lines[at + 1:]]


def checked_experiment_lines(path: Path, kept: dict[str, PreparedRun] | None = None) -> list[str]:
    """The lines of a pass of every check a run makes on the experiment ``path``, all of them run; ``kept``
    is given the prepared run."""
    from tasks.run.prepare_run import prepare_run

    prepared = prepare_run(Path(path))
    if kept is not None:
        kept["prepared"] = prepared
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
    if kind.forecast(prepared, None).lines():
        lines.append(FORECAST_MARK)
    lines.append("nothing was run or written")
    return lines
