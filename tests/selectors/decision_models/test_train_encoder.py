"""`tooleval train --encoder DIR`: a decision model whose cosine, kNN and probe features come from a local
sentence-transformers directory (a stronger or fine-tuned encoder) instead of the packaged MiniLM."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import yaml

from flows.cli import main
from schemas.decision_model import DecisionModelFile
from tasks.selectors.routers.embedding import DEFAULT_MODEL_ID, model_path
from tests.factories import SUPPORT
from tests.factories.decision_model import small_support_set, trained_model

pytestmark = pytest.mark.slow  # trains on MiniLM features


def one_arm_experiment(root, model_file: str):
    """An experiment on the set at ``root`` with one trained arm ``t`` on ``model_file``."""
    experiment = root / "exp.yaml"
    experiment.write_text(yaml.safe_dump({
        "name": "x", "taskset": str(root), "version": "v1", "seeds": [1, 2, 3],
        "defaults": {"catalogue": "giftcards", "prompt": "default"},
        "arms": [{"name": "t", "selector": "trained", "model": "tooleval-hybrid",
                  "options": {"model_file": model_file}}]}))
    return experiment


def test_a_directory_that_is_no_encoder_is_bad_input_before_training(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    for given in (tmp_path / "empty", tmp_path / "absent"):
        out = tmp_path / "m.json"
        assert main(["train", str(SUPPORT / "v1.jsonl"), "--out", str(out), "--encoder", str(given)]) == 2
        err = capsys.readouterr().err
        assert "[encoder]" in err and str(given) in err and "modules.json" in err
        assert not out.exists()


def test_the_same_weights_from_a_directory_train_the_same_model(tmp_path, capsys, monkeypatch):
    """The packaged MiniLM copied to a folder of its own is another encoder id with the same vectors: the model
    file records the folder, its vectors are the packaged model's to float32 rounding, and so are its
    cross-fitted figures; its weights agree to the optimiser's tolerance.

    Why not every weight to float rounding: the same vectors in other batches differ by ~3e-7, and L-BFGS
    stops at its tolerance (the loss no longer falls by more than ~2e-9 relative, or a small gradient), not
    at one exact point, so where the loss is flat that noise moves a weight by ~4e-3: two trainings of the
    default model in one process, one from the disk cache and one from the process memo, differ that much."""
    from tasks.selectors.routers.embedding import EmbeddingSelector

    monkeypatch.setenv("TOOLEVAL_EMBEDDING_CACHE", "off")  # the folder's vectors are encoded here, not read
    root = small_support_set(tmp_path / "set")
    default = DecisionModelFile.model_validate_json(trained_model(root).read_bytes())
    encoder = tmp_path / "encoder"
    shutil.copytree(model_path(DEFAULT_MODEL_ID), encoder)
    texts = [json.loads(line)["messages"][-1]["content"] for line in (root / "v1.jsonl").open()]
    packaged = EmbeddingSelector(DEFAULT_MODEL_ID, {}).embed(texts)
    copied = EmbeddingSelector(str(encoder.resolve()), {}).embed(texts)
    assert np.abs(packaged - copied).max() < 1e-5
    out = root / "models" / "local.json"
    assert main(["train", str(root / "v1.jsonl"), "--out", str(out), "--encoder", str(encoder)]) == 0
    printed = capsys.readouterr().out
    assert f"encoder: {encoder.resolve()}" in printed
    local = DecisionModelFile.model_validate_json(out.read_bytes())
    assert default.embedding_model == DEFAULT_MODEL_ID and local.embedding_model == str(encoder.resolve())
    assert local.cross_fitted["accuracy"] == default.cross_fitted["accuracy"]
    assert local.cross_fitted == pytest.approx(default.cross_fitted, rel=1e-3)
    weights, expected = np.array(local.full_model.tool), np.array(default.full_model.tool)
    assert np.linalg.norm(weights - expected) <= 0.01 * np.linalg.norm(expected)
    assert local.example_text_hashes == default.example_text_hashes


def test_an_arm_whose_model_encoder_is_not_here_is_refused_before_selecting(tmp_path, capsys, small_support_model):
    shared, trained = small_support_model
    root = shutil.copytree(shared, tmp_path / "set")  # the experiment and the moved model are written beside it
    model = json.loads(trained.read_text())
    model["embedding_model"] = str(tmp_path / "gone-encoder")
    (root / "models" / "moved.json").write_text(json.dumps(model))
    experiment = one_arm_experiment(root, "models/moved.json")
    assert main(["fit", str(experiment), "--arm", "t"]) == 2
    err = capsys.readouterr().err
    assert "arm t: [router-files]" in err and "gone-encoder" in err and "not on this machine" in err


def test_a_model_whose_encoder_directory_now_holds_other_weights_is_refused(tmp_path, capsys):
    """Fine-tuning again into the same folder keeps every file name and size: the model's logit was fitted on
    the old vectors, so the run must not score with the new ones."""
    root = small_support_set(tmp_path / "set")
    encoder = tmp_path / "encoder"
    shutil.copytree(model_path(DEFAULT_MODEL_ID), encoder)
    assert main(["train", str(root / "v1.jsonl"), "--out", str(root / "models" / "local.json"),
                 "--encoder", str(encoder)]) == 0
    experiment = one_arm_experiment(root, "models/local.json")
    capsys.readouterr()
    assert main(["fit", str(experiment), "--arm", "t"]) == 0  # the same weights: accepted
    weights = next(p for p in encoder.rglob("*") if p.stat().st_size > 10_000_000)
    data = np.frombuffer(weights.read_bytes(), dtype=np.uint8)
    weights.write_bytes((data ^ 1).tobytes())  # every byte moved, as fine-tuning moves every weight; same size
    capsys.readouterr()
    assert main(["fit", str(experiment), "--arm", "t"]) == 2
    err = capsys.readouterr().err
    assert "arm t: [router-files]" in err and "other weights" in err
