"""A small task set cut from the bundled support set, and a decision model trained on it (MiniLM runs:
only slow tests use these)."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

from schemas.decision_model import DecisionModelFile, LogitWeights
from tasks.selectors.decision_models.decision_features import text_hash
from tasks.selectors.routers.router_setup import DEFAULT_MODELS
from tasks.selectors.decision_models.train_decision_model import train_decision_model
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


def hand_written_model(examples: dict[str, str], labels: list[str], folds: int, taskset: str = "metatool-a",
                       taskset_hash: str = "hash-a") -> DecisionModelFile:
    """A decision model file written by hand (no MiniLM, no training): the examples (id -> text, fold = their
    position), one weight, and ``folds`` fold models (none for one fold), as ``tooleval train`` writes them."""
    weights = LogitWeights(tool=[1.0], none=None, temperature=1.0, temperature_fitted_on=len(examples))
    return DecisionModelFile(
        method="test", embedding_model=DEFAULT_MODELS["embedding"], tool_features=["cosine"], none_features=[],
        taskset=taskset,
        version="v1", taskset_hash=taskset_hash, trained_at=datetime(2026, 12, 1, tzinfo=timezone.utc), l2=1.0,
        folds=folds, fold_salt="s", fold_models=[weights] * folds if folds > 1 else [], full_model=weights,
        example_ids=list(examples), example_text_hashes=[text_hash(t) for t in examples.values()],
        example_labels=labels, example_folds=list(range(len(examples))), example_texts=list(examples.values()),
        cross_fitted={"n": 2.0, "accuracy": 0.8996, "nll": 0.4, "ece": 0.03})
