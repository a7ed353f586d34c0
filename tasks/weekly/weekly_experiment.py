"""The weekly experiment: the production configuration measured on every task-set version in use.

Written from the production experiment file: its arm(s), each once per version in use (named
``<arm>.<version>``), weighted by the newest production window; comparisons pair the same arm across
versions (only the version changes), among them the calibration pair (the new version's parent -> the
new version).

Versions in use: those the production experiment names, the newest adjudicated version, and the new one;
provisional versions only when the run allows provisional labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from schemas.selection.experiment import SelectionArmSpec, SelectionComparison
from tasks.experiment.resolve_experiment import load_experiment_file
from tasks.files.atomic_write import write_atomic
from tasks.files.input_errors import InputError
from tasks.traffic.publish_version import manifests, version_number
from tasks.traffic.version_age import version_is_adjudicated


@dataclass(frozen=True)
class WeeklyExperiment:
    path: Path
    versions: list[str]
    arms: list[str]
    """Production arm names (before the version suffix)."""
    calibration: list[tuple[str, str]]
    """(old arm, new arm) pairs that calibrate the new version."""
    skipped_provisional: list[str]


def arm_name(arm: str, version: str) -> str:
    return f"{arm}.{version}"


def versions_in_use(taskset_dir: Path, experiment_versions: list[str], new_version: str | None,
                    allow_provisional: bool, extra: list[str] | None = None) -> tuple[list[str], list[str]]:
    """(versions to measure, provisional versions left out) in version order."""
    found = manifests(taskset_dir)
    wanted = set(experiment_versions) | set(extra or [])
    adjudicated = [(m.created_at, v) for v, m in found.items() if version_is_adjudicated(taskset_dir, v)]
    if adjudicated:
        wanted.add(max(adjudicated)[1])
    if new_version:
        wanted.add(new_version)
    missing = sorted(v for v in wanted if v not in found)
    if missing:
        raise InputError.one(str(taskset_dir), ", ".join(missing), "version-exists", "no such frozen version")
    keep = [v for v in wanted if allow_provisional or version_is_adjudicated(taskset_dir, v)]
    skipped = [v for v in wanted if v not in keep]
    return sorted(keep, key=version_number), sorted(skipped, key=version_number)


def write_weekly_experiment(
    production_experiment: Path, taskset_dir: Path, out_dir: Path, window: str, new_version: str | None,
    parent: str | None, allow_provisional: bool, arm: str | None = None, extra_versions: list[str] | None = None,
) -> WeeklyExperiment:
    production_experiment = Path(production_experiment).resolve()
    spec = load_experiment_file(production_experiment)
    chosen = [a for a in spec.arms if arm is None or a.name == arm]
    if not chosen:
        raise InputError.one(str(production_experiment), f"arm {arm}", "arm-exists", "the experiment has no such arm")
    experiment_versions = sorted({a.version or spec.version for a in chosen})
    versions, skipped = versions_in_use(taskset_dir, experiment_versions, new_version, allow_provisional,
                                        extra_versions)
    arms: list[SelectionArmSpec] = [a.model_copy(update={"name": arm_name(a.name, v), "version": v})
                           for a in chosen for v in versions]
    pairs = [(arm_name(a.name, old), arm_name(a.name, new)) for a in chosen for old, new in zip(versions, versions[1:])]
    calibration: list[tuple[str, str]] = []
    if new_version in versions and parent in versions and parent != new_version:
        calibration = [(arm_name(a.name, parent), arm_name(a.name, new_version)) for a in chosen]
        pairs += [p for p in calibration if p not in pairs]
    data = spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.update({
        "name": f"{spec.name}-weekly",
        "description": f"{spec.name} on every version in use ({', '.join(versions)}), weighted by window {window}.",
        "taskset": str(Path(taskset_dir).resolve()),
        "version": versions[-1],
        "weights": window,
        "arms": [a.model_dump(mode="json", exclude_none=True) for a in arms],
        "comparisons": [SelectionComparison(**{"from": a, "to": b}).model_dump(by_alias=True) for a, b in pairs],
    })
    if data.get("criteria") and not Path(data["criteria"]).is_absolute():
        data["criteria"] = str((production_experiment.parent / data["criteria"]).resolve())
    path = write_atomic(out_dir / f"{spec.name}-weekly-{window}-{'-'.join(versions)}.yaml",
                        "# Written by the weekly flow from " + str(production_experiment) + "\n"
                        + yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return WeeklyExperiment(path=path, versions=versions, arms=[a.name for a in chosen], calibration=calibration,
                            skipped_provisional=skipped)
