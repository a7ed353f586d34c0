"""Extract and check a task experiment: resolve the arms, load each task-set version, check every task
against the surfaces in use, read the criteria. Nothing is called and nothing is written; a problem
raises InputError naming the file, the line or id, and the rule."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from schemas.surface.criteria import SurfaceCriteria
from tasks.surface.load_tasks import TaskVersion, load_task_version
from tasks.surface.resolve_task_experiment import ResolvedTaskExperiment, resolve_task_experiment
from tasks.surface.task_checks import TaskCheckReport, check_tasks
from tasks.surface.task_criteria import load_task_criteria


@dataclass(frozen=True)
class PreparedTaskRun:
    experiment: ResolvedTaskExperiment
    versions: dict[str, TaskVersion]
    checks: dict[str, TaskCheckReport]
    criteria: tuple[Path, SurfaceCriteria] | None

    @property
    def taskset(self) -> str:
        return next(iter(self.versions.values())).taskset


def prepare_task_run(experiment_path: Path | str) -> PreparedTaskRun:
    experiment = resolve_task_experiment(Path(experiment_path))
    versions, checks = {}, {}
    for version in experiment.versions:
        versions[version] = load_task_version(experiment.taskset_dir, version)
        surfaces = {a.surface.name: a.surface for a in experiment.arms if a.version == version}
        checks[version] = check_tasks(versions[version], surfaces.values())
    slices = {s for v in versions.values() for s in v.manifest.slices}
    criteria = load_task_criteria(experiment.path, experiment.spec.criteria, [a.name for a in experiment.arms], slices)
    return PreparedTaskRun(experiment=experiment, versions=versions, checks=checks, criteria=criteria)


_PREPARED: dict[tuple[str, int, int], PreparedTaskRun] = {}


def prepare_task_run_once(experiment_path: Path | str) -> PreparedTaskRun:
    """``prepare_task_run`` once per experiment file (path, size, mtime) per process: the API prepares before
    Prefect starts (bad input fails fast) and the flow reuses it."""
    path = Path(experiment_path).resolve()
    stat = path.stat() if path.is_file() else None
    key = (str(path), stat.st_size if stat else -1, stat.st_mtime_ns if stat else -1)
    if key not in _PREPARED:
        prepared = prepare_task_run(experiment_path)
        _PREPARED.clear()
        _PREPARED[key] = prepared
    return _PREPARED[key]
