"""Build small task sets on disk for tests: a catalogue, a version, its manifest, weights, an experiment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tasks.taskset.load_taskset import freeze_version
from tests.factories.catalogues import SHOP_TOOLS

REQUESTS = [
    {"id": "r1", "messages": [{"role": "user", "content": "my parcel arrived smashed, I want my money back"}],
     "expected": "refund_order", "slice": "existing"},
    {"id": "r2", "messages": [{"role": "user", "content": "where is my parcel? when will the delivery arrive"}],
     "expected": "track_shipment", "slice": "existing"},
    {"id": "r3", "messages": [{"role": "user", "content": "cannot log in, please send a password reset link"}],
     "expected": "reset_password", "slice": "existing"},
    {"id": "r4", "messages": [{"role": "user", "content": "what is your return window policy"}],
     "expected": "search_kb", "slice": "existing"},
    {"id": "r5", "messages": [{"role": "user", "content": "tell me a joke about penguins"}],
     "expected": "none", "slice": "existing"},
]


def write_taskset(
    root: Path,
    requests: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
    weights: dict[str, float] | None = None,
    slices: list[str] | None = None,
    adjudications: list[dict[str, Any]] | None = None,
    freeze: bool = True,
) -> Path:
    """A task set named `root.name` with catalogue 'base', version v1, prompt 'default', weights 'w1'."""
    (root / "catalogues").mkdir(parents=True, exist_ok=True)
    (root / "prompts").mkdir(exist_ok=True)
    (root / "weights").mkdir(exist_ok=True)
    (root / "catalogues" / "base.json").write_text(json.dumps({"name": "base", "tools": tools or SHOP_TOOLS}))
    (root / "prompts" / "default.md").write_text("Pick the one tool that fits, or none.\n")
    lines = [json.dumps(r) for r in (REQUESTS if requests is None else requests)]
    (root / "v1.jsonl").write_text("\n".join(lines) + "\n")
    if adjudications:
        (root / "v1.adjudications.jsonl").write_text("\n".join(json.dumps(a) for a in adjudications) + "\n")
    shares = weights if weights is not None else {"refund_order": 0.5, "track_shipment": 0.3,
                                                  "reset_password": 0.1, "search_kb": 0.1}
    (root / "weights" / "w1.json").write_text(json.dumps({"window": "w1", "source": "test", "weights": shares}))
    if freeze:
        freeze_version(root, "v1", slices or ["existing"])
    return root


def write_experiment(root: Path, file: str = "exp.yaml", /, **overrides: Any) -> Path:
    """``experiments/<file>`` over the task set at `root` (two lexical rungs on the same catalogue unless
    ``overrides`` say otherwise: any key of the experiment file, ``name`` included)."""
    spec: dict[str, Any] = {
        "name": "test-experiment",
        "taskset": "..",
        "version": "v1",
        "seeds": [1, 2, 3],
        "batch_size": 2,
        "weights": "w1",
        "defaults": {"prompt": "default", "selector": "lexical", "model": "bm25-okapi", "catalogue": "base"},
        "arms": [{"name": "a"}, {"name": "b", "options": {"abstain_threshold": 0.5}}],
        "comparisons": [],
    }
    spec.update(overrides)
    (root / "experiments").mkdir(exist_ok=True)
    path = root / "experiments" / file
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


SUPPORT_OFFLINE = {"batch_size": 270, "weights": "2026-W36-W47", "comparisons": "ladder",
                   "defaults": {"prompt": "default", "selector": "lexical", "model": "bm25-okapi"}}
"""An offline (BM25) run over the bundled support set: 540 requests in two batches a seed, its weights window."""


def write_support_experiment(taskset: Path, name: str, arms: list[dict[str, Any]], file: str | None = None) -> Path:
    """An offline experiment over a copy of the support set (``support_copy``): the given arms, 3 seeds."""
    return write_experiment(taskset, file or f"{name}.yaml", name=name, arms=arms, **SUPPORT_OFFLINE)
