"""Extract and check: resolve the experiment, load each task-set version, run the label checks.

Everything here happens before any model call and writes nothing; a problem raises InputError.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from schemas.taskset import ProductionWeights
from tasks.files.input_errors import InputError, Problem
from tasks.run.drill_points import reached
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
        reached("label-checks", version)
        checks[version] = check_labels(versions[version], catalogues, weights, weights_path)
    refuse_leakage(experiment, versions)
    return PreparedRun(experiment=experiment, versions=versions, weights=weights, checks=checks)


def refuse_leakage(experiment: ResolvedExperiment, versions: dict[str, TaskSetVersion]) -> None:
    """A trained decision model may not score requests it learned from: a model cross-fitted on the version
    scores each with a fold model that never saw it; a one-fold model is refused here, before any selection."""
    problems: list[Problem] = []
    for arm in experiment.arms:
        if arm.decision_model_hash is None:
            continue
        options = arm.selector_options
        model_file = options.get("model_file") or (options.get("router_options") or {}).get("model_file")
        from tasks.selectors.trained import leaked_requests, load_model_file

        model = load_model_file(str(model_file), arm.decision_model_hash)
        table = versions[arm.version].table
        leaked = leaked_requests(model, table.get_column("id").to_list(), table.get_column("text").to_list())
        if leaked:
            shown = ", ".join(leaked[:5]) + (f" and {len(leaked) - 5} more" if len(leaked) > 5 else "")
            problems.append(Problem(
                str(experiment.path), f"arm {arm.name}", "decision-model-leakage",
                f"the decision model {model_file} learned from {len(leaked)} request(s) of {arm.version} (by id or "
                f"text): {shown}; it was trained with one fold, so no model of it is unseen by them: train with "
                "--folds 5 (cross-fitting) or on another version"))
    if problems:
        raise InputError(problems)


_PREPARED: dict[tuple[str, int, int], PreparedRun] = {}


def prepare_once(experiment_path: Path | str) -> PreparedRun:
    """``prepare_run`` at most once per experiment file per process: the CLI prepares before Prefect starts
    (bad input fails fast, before any model call) and the flow it then runs gets the same checked run
    instead of loading and checking the task set a second time. A deployment's flow run, in a process of
    its own, prepares here for the first time. The key holds the file's path, size and modification time,
    so an edited experiment file is prepared again."""
    path = Path(experiment_path).resolve()
    stat = path.stat() if path.is_file() else None
    key = (str(path), stat.st_size if stat else -1, stat.st_mtime_ns if stat else -1)
    if key not in _PREPARED:
        prepared = prepare_run(experiment_path)
        _PREPARED.clear()  # one prepared run per process at a time: a run's requests can be large
        _PREPARED[key] = prepared
    return _PREPARED[key]
