"""How old the newest adjudicated version is: a set that is not relabelled measures a past population."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tasks.taskset.load_taskset import load_version
from tasks.traffic.publish_version import manifests


@dataclass(frozen=True)
class LabelAge:
    newest_adjudicated: str | None
    created_at: datetime | None
    age_days: float | None
    max_age_days: int
    provisional_versions: list[str]

    @property
    def warning(self) -> str | None:
        if self.newest_adjudicated is None:
            return "no version of this task set is fully adjudicated"
        if self.age_days is not None and self.age_days > self.max_age_days:
            return (f"the newest adjudicated version, {self.newest_adjudicated}, is {self.age_days:.0f} days old "
                    f"(more than {self.max_age_days}): import an adjudicated labelling queue")
        return None


def version_is_adjudicated(taskset_dir: Path, version: str) -> bool:
    return all(r.label_status == "adjudicated" for r in load_version(taskset_dir, version).requests)


def label_age(taskset_dir: Path, now: datetime, max_age_days: int) -> LabelAge:
    """The newest (by creation time) version whose every label is adjudicated, and its age at ``now``."""
    adjudicated, provisional = [], []
    for version, manifest in manifests(taskset_dir).items():
        (adjudicated if version_is_adjudicated(taskset_dir, version) else provisional).append((manifest.created_at, version))
    if not adjudicated:
        return LabelAge(None, None, None, max_age_days, [v for _, v in sorted(provisional)])
    created_at, version = max(adjudicated)
    return LabelAge(version, created_at, (now - created_at).total_seconds() / 86400, max_age_days,
                    [v for _, v in sorted(provisional)])
