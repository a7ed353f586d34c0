"""Extract and check: resolve the experiment, load each task-set version its arms use with its cheap checks
(by the experiment's instrument), read the acceptance criteria; then the checks that cost seconds (the label
checks), last, so bad input of any other kind is refused at once.

Everything here happens before any model call and writes nothing; a problem raises InputError.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemas.criteria import CriteriaFile
from schemas.taskset import ProductionWeights
from tasks.experiment.criteria import experiment_criteria
from tasks.experiment.resolve_experiment import ResolvedExperiment, resolve_experiment
from tasks.instrument_registry import instrument

if TYPE_CHECKING:
    from tasks.instrument_api import Instrument


@dataclass(frozen=True)
class Loaded:
    """What an instrument loads for a run: each version the arms use and what its checks found."""

    versions: dict[str, Any]
    checks: dict[str, Any]
    weights: ProductionWeights | None = None
    """The production weights window the experiment names (selection: the weighted figures)."""


@dataclass(frozen=True)
class PreparedRun:
    experiment: ResolvedExperiment
    versions: dict[str, Any]
    checks: dict[str, Any]
    """What the instrument's checks found per version (the costly ones once ``checked``)."""
    criteria: tuple[Path, CriteriaFile] | None
    weights: ProductionWeights | None = None
    checked: bool = True
    """False until the checks that cost seconds ran (``check_prepared``)."""

    @property
    def instrument(self) -> Instrument:
        """The experiment's ``Instrument`` (tasks/instrument_api.py)."""
        return instrument(self.experiment.instrument)

    @property
    def taskset(self) -> str:
        return next(iter(self.versions.values())).taskset

    @property
    def planned_items(self) -> int:
        """Rows the run will land: each arm's work items under every seed."""
        kind = self.instrument
        return sum(len(kind.work_items(self.versions[arm.version])) for arm in self.experiment.arms) * len(
            self.experiment.seeds)


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
    and prepares its own."""

    __slots__ = ("run",)

    def __init__(self, run: PreparedRun) -> None:
        self.run = check_prepared(run)
