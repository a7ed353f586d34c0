"""A small task set cut from the bundled support set, and a decision model trained on it (MiniLM runs:
only slow tests use these)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tasks.selectors.train_decision_model import train_decision_model
from tasks.taskset.load_taskset import freeze_version
from tests.factories import SUPPORT


def small_support_set(root: Path, every: int = 3, limit: int = 150) -> Path:
    """Every ``every``-th request of the support set without a fallback ('none' labels included), its
    catalogues and prompts, frozen as v1 of a new set at ``root``."""
    shutil.copytree(SUPPORT / "catalogues", root / "catalogues")
    shutil.copytree(SUPPORT / "prompts", root / "prompts")
    lines = [json.loads(line) for line in (SUPPORT / "v1.jsonl").read_text().splitlines()]
    kept = [r for i, r in enumerate(lines) if i % every == 0 and "fallback" not in r][:limit]
    (root / "v1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    freeze_version(root, "v1", sorted({r["slice"] for r in kept}))
    return root


def trained_model(root: Path, folds: int = 5) -> Path:
    """A decision model trained on the set at ``root`` (``models/folds<K>.json``)."""
    path = root / "models" / f"folds{folds}.json"
    if not path.exists():
        train_decision_model(root / "v1.jsonl", path, folds=folds)
    return path
