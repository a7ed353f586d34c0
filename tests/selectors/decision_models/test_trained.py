"""The trained decision model (tasks/selectors/decision_models/train_decision_model.py, trained.py): it learns from a
version's labelled requests, scores every request it learned from with a fold model that never saw it,
refuses to score them when trained without folds, and gives calibrated probabilities for every offered tool
and 'none'. Trains on 150 requests of the bundled support set (MiniLM runs: the slow tier)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from flows.cli import main
from schemas.taskset import Message
from tasks.files.input_errors import InputError
from tasks.run.prepare_run import prepare_run
from tasks.selectors.base import SelectionInput
from tasks.selectors.decision_models.decision_features import text_hash
from tasks.selectors.decision_models.trained import LEAKED, TrainedSelector, leaked_requests
from tasks.taskset.load_taskset import load_catalogue, load_version
from tests.factories.decision_model import small_support_set

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def small_set(tmp_path_factory) -> Path:
    return small_support_set(tmp_path_factory.mktemp("small") / "support-small")


@pytest.fixture(scope="module")
def models(small_set) -> dict[str, Path]:
    out = {}
    for folds in (5, 1):  # the CLI, as a user trains
        path = small_set / "models" / f"folds{folds}.json"
        assert main(["train", str(small_set / "v1.jsonl"), "--out", str(path), "--folds", str(folds)]) == 0
        out[f"folds{folds}"] = path
    return out


def inputs_of(root: Path, ids: list[str] | None = None) -> list[SelectionInput]:
    tools = load_catalogue(root, "giftcards").tools
    version = load_version(root, "v1")
    return [SelectionInput(r.id, r.messages, tools, "") for r in version.requests if ids is None or r.id in ids]


def test_probabilities_for_every_offered_tool_and_none(small_set, models):
    selector = TrainedSelector(options={"model_file": str(models["folds5"])})
    batch = inputs_of(small_set)
    selections = selector.select(batch)
    for item, selection in zip(batch, selections):
        assert set(selection.probabilities) == {t.name for t in item.tools} | {"none"}
        assert sum(selection.probabilities.values()) == pytest.approx(1.0)
        assert selection.confidence == pytest.approx(max(selection.probabilities.values()))
        assert selection.chosen == max(selection.probabilities, key=selection.probabilities.get)
    model = json.loads(models["folds5"].read_text())
    assert model["full_model"]["none"] is not None  # the set has 'none' labels: 'none' is learned
    expected = {r.id: r.expected for r in load_version(small_set, "v1").requests}
    right = sum(s.chosen == expected[s.request_id] for s in selections)
    assert right / len(selections) == pytest.approx(model["cross_fitted"]["accuracy"], abs=0.02)


def test_a_request_it_learned_from_is_scored_by_the_fold_that_never_saw_it(small_set, models):
    selector = TrainedSelector(options={"model_file": str(models["folds5"])})
    item = inputs_of(small_set)[0]
    fold = selector.fold_by_text[text_hash(item.text)]
    assert selector._which(item, text_hash(item.text)) == fold
    # its own text is never its nearest example: the best kNN similarity of its label is below 1
    from tasks.selectors.decision_models.decision_features import Examples, knn_by_label
    from tasks.selectors.decision_models.base_scores import router_scores

    _, query = router_scores([item])
    knn = knn_by_label(query, [text_hash(item.text)], selector.examples, fold)
    assert all(np.nan_to_num(top1, nan=0.0)[0] < 0.999 for top1, _ in knn.values())
    # nor any example of its fold: with only fold-k examples left, the fold-k model finds none at all
    ex = selector.examples
    only = ex.folds == fold
    fold_only = Examples(ex.embeddings[only], ex.labels[only], ex.text_hashes[only], ex.folds[only])
    assert all(np.isnan(top1[0]) for top1, _ in knn_by_label(query, ["x"], fold_only, fold).values())
    assert any(np.isfinite(top1[0]) for top1, _ in knn_by_label(query, ["x"], fold_only, None).values())
    # and its probe features come from the probe fitted without its fold (the file keeps that one)
    from tasks.selectors.decision_models.embedding_probe import fit_probe

    others = ex.folds != fold
    refit = fit_probe(ex.embeddings[others], ex.labels[others].astype(str))
    kept = selector.probe_scores(fold, query)
    assert kept.labels == refit.classes
    np.testing.assert_allclose(kept.log_proba, refit.log_proba(query), atol=1e-6)
    full = selector.probe_scores(None, query)  # the full model's probe learned from this request too
    assert full.labels != kept.labels or not np.allclose(full.log_proba, kept.log_proba, atol=1e-6)


def test_each_selection_records_how_far_its_request_is_from_the_examples(small_set, models):
    selector = TrainedSelector(options={"model_file": str(models["folds5"])})
    model = selector.model
    assert model.unseen_weight == 1.0 and model.unseen_zeroed and 0.0 < model.far_quantile < 0.5
    batch = inputs_of(small_set)
    far = SelectionInput("far-1", (Message(role="user", content="Compute the integral of x squared from 0 to 3"),),
                         batch[0].tools, "")
    selections = selector.select(batch + [far])
    near = np.array([s.nearest_example_cos for s in selections[:-1]])
    assert np.all((near > 0) & (near < 0.999))  # its own text (and fold) excluded: never itself
    # the cut-off is the 5% quantile of these held-out cosines (same folds, same examples)
    assert np.mean(near < model.far_cutoff) == pytest.approx(model.far_quantile, abs=0.02)
    assert selections[-1].nearest_example_cos < model.far_cutoff  # a maths question is out of the domain


def test_a_one_fold_model_refuses_requests_it_learned_from(small_set, models):
    selector = TrainedSelector(options={"model_file": str(models["folds1"])})
    learned = inputs_of(small_set)[:2]
    unseen = SelectionInput("new-1", (Message(role="user", content="please cancel my gift card order ASAP"),),
                            learned[0].tools, "")
    renamed = SelectionInput("other-id", learned[1].messages, learned[1].tools, "")  # same text, new id
    first, second, new, same_text = selector.select(learned + [unseen, renamed])
    assert first.outcome_hint == second.outcome_hint == same_text.outcome_hint == "error"
    assert first.detail == LEAKED and first.chosen is None
    assert new.outcome_hint == "ok" and new.chosen is not None
    model = selector.model
    assert leaked_requests(model, model.taskset, model.taskset_hash, ["x", learned[0].request_id],
                           ["zzz", "zzz"]) == [learned[0].request_id]


def test_a_run_refuses_a_one_fold_model_on_its_own_version_before_selecting(small_set, models):
    experiment = small_set / "experiments" / "trained.yaml"
    experiment.parent.mkdir(exist_ok=True)
    spec = {"name": "t", "taskset": "..", "version": "v1", "seeds": [1, 2, 3],
            "defaults": {"catalogue": "giftcards", "prompt": "default"},
            "arms": [{"name": "one-fold", "selector": "trained", "model": "tooleval-hybrid",
                      "options": {"model_file": "../models/folds1.json"}}]}
    experiment.write_text(yaml.safe_dump(spec))
    with pytest.raises(InputError) as caught:
        prepare_run(experiment)
    (problem,) = caught.value.problems
    assert problem.rule == "decision-model-leakage" and problem.where == "arm one-fold"
    assert "folds1.json" in problem.message and "--folds 5" in problem.message
    spec["arms"][0]["options"]["model_file"] = "../models/folds5.json"
    experiment.write_text(yaml.safe_dump(spec))
    prepared = prepare_run(experiment)
    (arm,) = prepared.experiment.arms
    assert arm.decision_model_hash and arm.selector_options["model_sha256"] == arm.decision_model_hash
    assert arm.abstain_rule == "default"


def test_never_and_a_fitted_cutoff_replace_the_learned_none(small_set, models):
    batch = inputs_of(small_set)[:20]
    never = TrainedSelector(options={"model_file": str(models["folds5"]), "abstain_threshold": "never"})
    assert all(s.chosen != "none" and s.probabilities["none"] == 0.0 for s in never.select(batch))
    always = TrainedSelector(options={"model_file": str(models["folds5"]), "abstain_threshold": 1e6})
    assert all(s.chosen == "none" for s in always.select(batch))
    assert [len(row) for row in never.scores(batch)] == [len(item.tools) for item in batch]


def test_fit_fits_the_trained_models_none_cutoff(small_set, models, capsys):
    experiment = small_set / "experiments" / "fit.yaml"
    experiment.parent.mkdir(exist_ok=True)
    experiment.write_text(yaml.safe_dump({
        "name": "t", "taskset": "..", "version": "v1", "seeds": [1, 2, 3],
        "defaults": {"catalogue": "giftcards", "prompt": "default"},
        "arms": [{"name": "trained", "selector": "trained", "model": "tooleval-hybrid",
                  "options": {"model_file": "../models/folds5.json"}}]}))
    assert main(["fit", str(experiment), "--arm", "trained"]) == 0
    assert "router: trained tooleval-hybrid" in capsys.readouterr().out
    written = json.loads((experiment.parent / "cutoffs" / "trained-v1.json").read_text())
    # the model learned 'none': the fit moves it (a margin) and keeps what it learned, so on the half it was
    # fitted on it is never worse than the model as trained (margin 0 is one of the cut-offs it weighs)
    assert written["scale"] == "margin" and written["threshold"] is not None
    assert written["fit"]["correct_with_cutoff"] >= written["fit"]["correct_default"]
    spec = yaml.safe_load(experiment.read_text())
    spec["arms"][0]["options"]["abstain_cutoff"] = "cutoffs/trained-v1.json"
    experiment.write_text(yaml.safe_dump(spec))
    (arm,) = prepare_run(experiment).experiment.arms
    assert arm.abstain_rule.startswith("fitted cutoffs/trained-v1.json") and "margin" in arm.abstain_rule
    assert arm.selector_options["abstain_margin"] == written["threshold"]
    assert "abstain_threshold" not in arm.selector_options


def test_a_margin_moves_the_learned_none_and_zero_is_the_model_as_trained(small_set, models):
    batch = inputs_of(small_set)
    model_file = str(models["folds5"])
    trained = TrainedSelector(options={"model_file": model_file}).select(batch)
    zero = TrainedSelector(options={"model_file": model_file, "abstain_margin": 0.0}).select(batch)
    assert [(s.chosen, s.probabilities) for s in zero] == [(s.chosen, s.probabilities) for s in trained]
    margins = TrainedSelector(options={"model_file": model_file}).none_margins(batch)
    for selection, row in zip(trained, margins):  # 'none' exactly where no tool beats the learned 'none'
        assert (selection.chosen == "none") == (float(np.max(row)) < 0)
    up = TrainedSelector(options={"model_file": model_file, "abstain_margin": 1e6}).select(batch)
    down = TrainedSelector(options={"model_file": model_file, "abstain_margin": -1e6}).select(batch)
    assert all(s.chosen == "none" for s in up) and all(s.chosen != "none" for s in down)
    ranked = sorted(float(np.max(row)) for row in margins)
    some = (ranked[len(ranked) // 2] + ranked[len(ranked) // 2 + 1]) / 2  # between two rows: no row sits on it
    middle = TrainedSelector(options={"model_file": model_file, "abstain_margin": some}).select(batch)
    assert [s.chosen == "none" for s in middle] == [float(np.max(row)) < some for row in margins]


def test_a_margin_needs_a_learned_none_a_number_and_no_other_cutoff(small_set, models, tmp_path):
    from tasks.selectors.routers.router_setup import router_setup

    model = json.loads(models["folds5"].read_text())
    model["full_model"]["none"] = None
    without = tmp_path / "no-none.json"
    without.write_text(json.dumps(model))
    for options, message in (({"model_file": str(without), "abstain_margin": 0.5}, "learned none"),
                             ({"model_file": str(models["folds5"]), "abstain_margin": "high"}, "must be a number"),
                             ({"model_file": str(models["folds5"]), "abstain_margin": float("inf")}, "must be a number"),
                             ({"model_file": str(models["folds5"]), "abstain_margin": 0.5,
                               "abstain_threshold": 1.0}, "not both")):
        with pytest.raises(ValueError, match=message):
            router_setup("trained", None, options, has_none_labels=True, base_dir=tmp_path)
    with pytest.raises(ValueError, match="the lexical router takes abstain_threshold"):
        router_setup("lexical", None, {"abstain_margin": 0.5}, has_none_labels=True, base_dir=tmp_path)
    setup = router_setup("trained", None, {"model_file": str(models["folds5"]), "abstain_margin": 0.5},
                         has_none_labels=True, base_dir=tmp_path)
    assert setup.abstain_rule == "option: margin 0.5"
