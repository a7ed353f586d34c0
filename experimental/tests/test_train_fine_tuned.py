"""`tooleval train --fine-tune`: a decision model that carries a fine-tuned encoder per fold model and one for
the full model, and scores by the product of its logit and the fine-tuned cosine
(experimental/fine_tuning/product_experts.py). Trains on 36 requests of the bundled support set, 2 folds, 1 epoch (the slow tier)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from flows.cli import main
from schemas.catalogue import NONE_LABEL
from schemas.decision_model import DecisionModelFile
from tasks.selectors.base import SelectionInput
from tasks.selectors.decision_models.conditional_logit import softmax, top_label
from tasks.selectors.decision_models.decision_features import text_hash
from tasks.selectors.routers.embedding_store import files_fingerprint
from tasks.selectors.decision_models.labelled_inputs import labelled_inputs
from experimental.fine_tuning.product_experts import expert_cosines, logit_only, product_utilities
from tasks.selectors.routers.router_setup import router_setup
from tasks.selectors.decision_models.trained import TrainedSelector
from tasks.stats.abstain_cutoff import CONFIRM, split_half
from tasks.taskset.load_taskset import load_catalogue, load_version
from tests.factories.decision_model import small_support_set

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, Path]:
    """The small set, and the model file `tooleval train --fine-tune` wrote for it."""
    root = small_support_set(tmp_path_factory.mktemp("ft") / "set", every=4, limit=36)
    out = root / "models" / "ft.json"
    assert main(["train", str(root / "v1.jsonl"), "--out", str(out), "--folds", "2", "--fine-tune",
                 "--fine-tune-epochs", "1"]) == 0
    return root, out


def inputs_and_labels(root: Path) -> tuple[list[SelectionInput], list[str]]:
    return labelled_inputs(load_version(root, "v1").table, load_catalogue(root, "giftcards").tools)


def test_each_model_names_its_own_fine_tuned_encoder_beside_the_file(trained):
    root, out = trained
    model = DecisionModelFile.model_validate_json(out.read_bytes())
    experts = [w.expert for w in [*model.fold_models, model.full_model]]
    assert len(experts) == 3 and all(e is not None for e in experts)
    folders = [out.parent / e.encoder for e in experts]
    assert len(set(folders)) == 3 and all(f.parent == out.with_suffix(".encoders") for f in folders)
    assert sorted(p.name for p in out.with_suffix(".encoders").iterdir()) == sorted(f.name for f in folders)
    assert all(f.stat().st_mode & 0o777 == out.parent.stat().st_mode & 0o777 for f in folders)  # as the umask says
    for expert, folder in zip(experts, folders):
        assert files_fingerprint(str(folder)) == expert.encoder_files and expert.encoder_files[:12] in folder.name
        assert expert.tau is not None  # the set has 'none' labels: the encoder learned a threshold for it
        assert expert.epochs == 1 and expert.weight == 0.5 and expert.temperature > 0
    # the fold encoders learned from the other fold, the full one from every request
    usable = len(model.example_ids)
    assert experts[0].trained_on + experts[1].trained_on == usable == experts[2].trained_on
    assert model.cross_fitted_logit is not None and model.cross_fitted["n"] == model.cross_fitted_logit["n"]


def test_its_version_scores_as_its_cross_fitted_figures_say(trained):
    """A run of the training version: each request under its fold's logit and its fold's encoder, neither of
    which saw it; the right picks are those the held-out product counted when training."""
    root, out = trained
    model = DecisionModelFile.model_validate_json(out.read_bytes())
    inputs, labels = inputs_and_labels(root)
    picks = [s.chosen for s in TrainedSelector(options={"model_file": str(out)}).select(inputs)]
    right = sum(p == label for p, label in zip(picks, labels))
    assert right == round(model.cross_fitted["accuracy"] * model.cross_fitted["n"])


def test_the_product_is_half_log_p_plus_half_log_q_of_the_requests_own_fold(trained, tmp_path):
    root, out = trained
    model = DecisionModelFile.model_validate_json(out.read_bytes())
    inputs, _ = inputs_and_labels(root)
    # the logit alone: the same file without its experts
    plain = tmp_path / "plain.json"
    plain.write_text(logit_only(model).model_dump_json())
    logit = TrainedSelector(options={"model_file": str(plain)})._score(inputs)
    product = TrainedSelector(options={"model_file": str(out)})._score(inputs)
    folds = dict(zip(model.example_text_hashes, model.example_folds))
    for item, (p, *_), (got, *_) in zip(inputs, logit, product):
        weights = model.fold_models[folds[text_hash(item.text)]]
        expert = weights.expert
        own = expert_cosines([item], str(out.parent / expert.encoder))
        s = product_utilities(p[None], own, expert.tau, expert.scale) / expert.temperature
        want = top_label(softmax(s), expert.confidence_slope, expert.confidence_shift)[0]
        assert np.allclose(got, want, atol=1e-9)
        full = model.full_model.expert
        other = expert_cosines([item], str(out.parent / full.encoder))
        assert not np.allclose(own[0], other[0])  # not the full model's encoder: that one saw the request


def test_a_changed_or_missing_encoder_is_refused_before_a_run(trained, tmp_path):
    root, out = trained
    copy = tmp_path / "models"
    shutil.copytree(out.parent, copy)
    model_file = copy / out.name
    options = {"model_file": str(model_file)}
    assert router_setup("trained", "tooleval-hybrid", options, has_none_labels=True, base_dir=tmp_path).abstain_rule == \
        "default"  # a copied model folder works where it lands: the encoders are named relative to the file
    model = DecisionModelFile.model_validate_json(model_file.read_bytes())
    folder = copy / model.fold_models[1].expert.encoder
    config = folder / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "changed": True}))
    with pytest.raises(ValueError, match="other weights"):
        router_setup("trained", "tooleval-hybrid", options, has_none_labels=True, base_dir=tmp_path)
    shutil.rmtree(folder)
    with pytest.raises(ValueError, match="not there"):
        router_setup("trained", "tooleval-hybrid", options, has_none_labels=True, base_dir=tmp_path)


def test_training_again_without_fine_tuning_leaves_no_encoder_behind(trained, tmp_path):
    root, out = trained
    copy = tmp_path / "models"
    shutil.copytree(out.parent, copy)
    assert main(["train", str(root / "v1.jsonl"), "--out", str(copy / out.name), "--folds", "2"]) == 0
    model = DecisionModelFile.model_validate_json((copy / out.name).read_bytes())
    assert model.full_model.expert is None and model.cross_fitted_logit is None
    assert not any((copy / out.name).with_suffix(".encoders").iterdir())
    picks = TrainedSelector(options={"model_file": str(copy / out.name)}).select(inputs_and_labels(root)[0][:3])
    assert all(s.chosen is not None for s in picks) and NONE_LABEL in picks[0].probabilities


def test_zero_fine_tuning_epochs_is_bad_input_before_training(tmp_path, capsys):
    root = small_support_set(tmp_path / "set", every=4, limit=36)
    out = root / "models" / "ft.json"
    assert main(["train", str(root / "v1.jsonl"), "--out", str(out), "--fine-tune", "--fine-tune-epochs", "0"]) == 2
    err = capsys.readouterr().err
    assert "[fine-tune]" in err and "v1.jsonl" in err and not out.exists() and not out.with_suffix(".encoders").exists()


@pytest.mark.parametrize("options", [["--fine-tune-seed", "1"], ["--fine-tune", "--fine-tune-seed", "-1"]])
def test_a_draw_without_fine_tuning_or_below_zero_is_bad_input_before_training(tmp_path, capsys, options):
    root = small_support_set(tmp_path / "set", every=4, limit=36)
    out = root / "models" / "ft.json"
    assert main(["train", str(root / "v1.jsonl"), "--out", str(out), *options]) == 2
    err = capsys.readouterr().err
    assert "[fine-tune]" in err and "--fine-tune-seed" in err and not out.exists()


def test_another_draw_tunes_other_encoders_on_the_same_requests_and_records_it(trained, tmp_path, capsys):
    root, out = trained
    other = tmp_path / "models" / "ft.json"
    capsys.readouterr()
    assert main(["train", str(root / "v1.jsonl"), "--out", str(other), "--folds", "2", "--fine-tune",
                 "--fine-tune-epochs", "1", "--fine-tune-seed", "1"]) == 0
    assert "1 epoch(s), lr 3e-05, draw 1)" in capsys.readouterr().out
    first, second = (DecisionModelFile.model_validate_json(f.read_bytes()) for f in (out, other))
    pairs = list(zip([*first.fold_models, first.full_model], [*second.fold_models, second.full_model]))
    for a, b in pairs:
        assert (a.expert.seed, b.expert.seed) == (0, 1) and a.expert.trained_on == b.expert.trained_on
        assert a.expert.encoder_files != b.expert.encoder_files  # other weights, from other shuffles
        assert a.tool == b.tool and a.none == b.none  # the logit does not depend on the draw
    inputs, _ = inputs_and_labels(root)
    q = [expert_cosines(inputs[:4], str(f.parent / w.expert.encoder)) for f, w in ((out, first.full_model),
                                                                                     (other, second.full_model))]
    assert not all(np.allclose(x, y) for x, y in zip(*q))


def test_a_cutoff_moves_the_products_none_and_leaves_its_tools_as_they_are(trained):
    """The product's 'none' is the two experts' together; a margin adds to its utility, a constant replaces it,
    'never' removes it. The tools' utilities are the same under every cut-off (the logit inside the product keeps
    its learned 'none')."""
    root, out = trained
    inputs, _ = inputs_and_labels(root)
    as_trained = TrainedSelector(options={"model_file": str(out)})._score(inputs)
    tools = np.array([u for _, u, _, _ in as_trained])
    learned = np.array([none for *_, none in as_trained])
    best = tools.max(axis=1)
    assert np.isfinite(learned).all()  # the set has 'none' labels: both experts learned one
    gap = best - learned
    margin = float(np.median(gap))  # some requests on either side
    cutoff = float(np.median(best))
    for option, none_wins in (({"abstain_margin": margin}, gap < margin), ({"abstain_threshold": cutoff}, best < cutoff),
                              ({"abstain_threshold": "never"}, np.zeros(len(inputs), dtype=bool))):
        router = TrainedSelector(options={"model_file": str(out), **option})
        scored = router._score(inputs)
        assert np.allclose(np.array([u for _, u, _, _ in scored]), tools)
        assert np.allclose(np.array([none for *_, none in scored]), learned)
        picks = [s.chosen for s in router.select(inputs)]
        assert 0 < sum(none_wins) < len(inputs) or option == {"abstain_threshold": "never"}
        assert [p == NONE_LABEL for p in picks] == none_wins.tolist(), option
        assert all(p == item.tools[int(np.argmax(u))].name for p, item, u, w in zip(picks, inputs, tools, none_wins)
                   if not w)


def test_fit_fits_a_margin_on_the_product_that_a_run_confirms(trained, tmp_path):
    """`tooleval fit` on a fine-tuned model: the margin it writes, run on the confirm half, is right exactly as
    often as the cut-off file says."""
    root, out = trained
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(json.dumps({
        "name": "x", "taskset": str(root), "version": "v1", "seeds": [1, 2, 3],
        "defaults": {"catalogue": "giftcards", "prompt": "default"},
        "arms": [{"name": "t", "selector": "trained", "model": "tooleval-hybrid",
                  "options": {"model_file": str(out)}}]}))
    assert main(["fit", str(experiment), "--arm", "t"]) == 0
    cutoff = json.loads((tmp_path / "cutoffs" / "t-v1.json").read_text())
    assert cutoff["scale"] == "margin"
    inputs, labels = inputs_and_labels(root)
    confirm = [(item, label) for item, label in zip(inputs, labels)
               if split_half(item.request_id, cutoff["split_salt"]) == CONFIRM]
    margin = "never" if cutoff["threshold"] is None else cutoff["threshold"]
    option = {"abstain_threshold": margin} if margin == "never" else {"abstain_margin": margin}
    picks = TrainedSelector(options={"model_file": str(out), **option}).select([item for item, _ in confirm])
    right = sum(s.chosen == label for s, (_, label) in zip(picks, confirm))
    assert right == cutoff["confirm"]["correct_with_cutoff"] and len(confirm) == cutoff["confirm"]["n_requests"]
