"""Extract and check: resolve the experiment, load each task-set version its arms use with its cheap checks
(by the experiment's instrument), read the acceptance criteria; then the checks that cost seconds (the label
checks), last, so bad input of any other kind is refused at once.

Everything here happens before any model call and writes nothing; a problem raises InputError.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tasks.core_records import Loaded
from tasks.experiment.criteria import experiment_criteria
from tasks.experiment.resolve_experiment import resolve_experiment
from tasks.instrument_api import Forecast, PreparedRun, instrument


def prepare_run(experiment_path: Path | str, *, checked: bool = True) -> PreparedRun:
    """The run, resolved and loaded with its cheap checks; with ``checked`` also the checks that cost seconds
    (``check_prepared``). With ``checked=False`` a caller runs its own cheap checks first
    (the warehouse, the disk, the trace target) so bad input is refused in well under a second."""
    experiment = resolve_experiment(Path(experiment_path))
    kind = instrument(experiment.instrument)
    loaded = kind.load(experiment)
    criteria = experiment_criteria(experiment, loaded.versions, kind.criteria_file)
    prepared = PreparedRun(experiment=experiment, versions=loaded.versions, checks=loaded.checks,
                           criteria=criteria, weights=loaded.weights, checked=False)
    return check_prepared(prepared) if checked else prepared


def check_prepared(prepared: PreparedRun) -> PreparedRun:
    """The instrument's checks that cost seconds (selection: the label checks), on a prepared run."""
    if prepared.checked:
        return prepared
    loaded = Loaded(versions=prepared.versions, checks=prepared.checks, weights=prepared.weights)
    checks = {**prepared.checks, **prepared.instrument.check_loaded(prepared.experiment, loaded)}
    return replace(prepared, checks=checks, checked=True)


class CheckedRun:
    """A prepared and checked run, handed to the evaluate flow (flows/evaluate.py ``prepared``) by the process
    that prepared it before Prefect started (flows/api.py), so the flow does not load and check the task set a
    second time. Prefect records a flow run's parameters: it cannot encode this object (it has no
    ``__dict__``) and records '<CheckedRun>', not the run's requests. A deployment's flow run is given none
    and prepares its own. ``forecast``: what the run will cost, worked out before Prefect started (None: the
    flow works it out)."""

    __slots__ = ("run", "forecast")

    def __init__(self, run: PreparedRun, forecast: Forecast | None = None) -> None:
        self.run = check_prepared(run)
        self.forecast = forecast
