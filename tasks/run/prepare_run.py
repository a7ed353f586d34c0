"""Extract and check: resolve the experiment, load each task-set version, run the label checks.

Everything here happens before any model call and writes nothing; a problem raises InputError.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from schemas.taskset import ProductionWeights
from tasks.taskset.label_checks import CheckReport, check_labels
from tasks.taskset.load_taskset import TaskSetVersion, load_version, load_weights
from tasks.experiment.resolve_experiment import ResolvedExperiment, resolve_experiment


@dataclass(frozen=True)
class PreparedRun:
    experiment: ResolvedExperiment
    versions: dict[str, TaskSetVersion]
    weights: ProductionWeights | None
    checks: dict[str, CheckReport]

    @property
    def taskset(self) -> str:
        return next(iter(self.versions.values())).taskset


def prepare_run(experiment_path: Path | str) -> PreparedRun:
    experiment = resolve_experiment(Path(experiment_path))
    catalogues = [arm.catalogue for arm in experiment.arms if arm.catalogue is not None]
    weights = weights_path = None
    if experiment.spec.weights:
        weights_path = experiment.taskset_dir / "weights" / f"{experiment.spec.weights}.json"
        weights = load_weights(experiment.taskset_dir, experiment.spec.weights)
    versions, checks = {}, {}
    for version in experiment.versions:
        versions[version] = load_version(experiment.taskset_dir, version)
        checks[version] = check_labels(versions[version], catalogues, weights, weights_path)
    return PreparedRun(experiment=experiment, versions=versions, weights=weights, checks=checks)
