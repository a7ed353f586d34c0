"""A selection's cache key does not depend on where the task set lies: the same experiment in a copied folder
(a CI checkout, a colleague's clone) finds the answers the first one cached, trained-model arms included; a
changed model file does not."""

from __future__ import annotations

import json
import shutil

from tasks.experiment.resolve_experiment import resolve_experiment
from tasks.selection.plan_batch import selector_fingerprint
from tests.factories import SUPPORT


def fingerprints(taskset):
    resolved = resolve_experiment(taskset / "experiments" / "routers.yaml")
    return {arm.name: selector_fingerprint(arm) for arm in resolved.arms}


def test_a_copied_task_set_keeps_every_arms_cache_key_and_a_changed_model_changes_it(tmp_path):
    here, there = tmp_path / "a" / "support", tmp_path / "b" / "elsewhere"
    shutil.copytree(SUPPORT, here)
    shutil.copytree(SUPPORT, there)
    first = fingerprints(here)
    assert set(first) == {"lexical-30", "embedding-30", "trained-30"}
    assert fingerprints(there) == first
    model = there / "models" / "hybrid.json"
    data = json.loads(model.read_text())
    data["l2"] = data["l2"] * 2  # another model file (as if trained with another penalty)
    model.write_text(json.dumps(data))
    changed = fingerprints(there)
    assert changed["trained-30"] != first["trained-30"]
    assert {k: v for k, v in changed.items() if k != "trained-30"} == {k: v for k, v in first.items() if k != "trained-30"}
