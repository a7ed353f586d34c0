"""What ``tooleval train`` prints about folds (tasks/selectors/decision_models/train_decision_model.py ``TrainedModel.lines``):
a cross-fitted model says so; a one-fold model is not cross-fitted, and says where its held-out figures come
from. Hand-written model files: the fast tier."""

from __future__ import annotations

from pathlib import Path

from tasks.selectors.decision_models.train_decision_model import DEFAULT_FOLDS, TrainedModel
from tests.factories.decision_model import hand_written_model

EXAMPLES = {"r1": "find me a cheap flight", "r2": "weather in Oslo"}


def printed(folds: int) -> str:
    model = hand_written_model(EXAMPLES, ["flights", "weather"], folds)
    return "\n".join(TrainedModel(model, Path("models/hybrid.json")).lines())


def test_a_cross_fitted_model_says_each_request_is_scored_by_a_model_that_never_saw_it():
    text = printed(5)
    assert "5 folds; cross-fitted (each request scored by a model that never\n  saw it): accuracy 90.0%" in text


def test_a_one_fold_model_does_not_claim_cross_fitting():
    text = printed(1)
    assert "; cross-fitted" not in text and "never saw it" not in text
    assert "1 fold: one model learned from every request, not cross-fitted" in text
    assert f"held out in a {DEFAULT_FOLDS}-fold check: accuracy 90.0%" in text


def test_the_far_rise_is_printed_with_its_slope_and_tool_cosine_and_only_when_there_is_one():
    model = hand_written_model(EXAMPLES, ["flights", "weather"], 5)
    with_rise = model.model_copy(update={"far_cutoff": 0.391, "far_slope": 240.7, "far_tool_cosine": 0.3935})
    text = "\n".join(TrainedModel(with_rise, Path("models/hybrid.json")).lines())
    assert "'none' rises 241 x the gap below the\n  cut-off x the gap below best-tool cosine 0.394" in text
    assert all(len(line) <= 80 for line in text.splitlines())
    for no_rise in ({"far_slope": 0.0, "far_tool_cosine": 0.39}, {"far_slope": None, "far_tool_cosine": None}):
        text = "\n".join(TrainedModel(model.model_copy(update=no_rise), Path("m.json")).lines())
        assert "rises" not in text


def test_a_model_without_none_labels_says_where_its_none_rises_from():
    model = hand_written_model(EXAMPLES, ["flights", "weather"], 5)
    rise = {"far_cutoff": 0.391, "far_slope": 240.7, "far_tool_cosine": 0.3935}
    text = "\n".join(TrainedModel(model.model_copy(update=rise | {"far_none_base": -1.896}), Path("m.json")).lines())
    assert "'none' not learned (no 'none' label)" in text
    assert "no 'none' label: the rise lifts 'none' from utility -1.90" in text
    assert all(len(line) <= 80 for line in text.splitlines())
    text = "\n".join(TrainedModel(model.model_copy(update=rise), Path("m.json")).lines())
    assert "'none' never chosen (no 'none' label)" in text and "lifts" not in text
