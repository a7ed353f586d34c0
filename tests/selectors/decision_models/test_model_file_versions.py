"""Model files written before transfer training and the far cut-off still load and score
as they did: the new fields take their defaults, and the features added since are left out of their
utilities. Hand-written files: the fast tier."""

from __future__ import annotations

import json

import numpy as np

from schemas.decision_model import DecisionModelFile
from tasks.selectors.decision_models.conditional_logit import utilities
from tasks.selectors.decision_models.decision_features import NONE_FEATURES, TOOL_FEATURES, model_columns
from tasks.selectors.routers.router_setup import router_setup
from tests.factories.decision_model import hand_written_model

OLD_TOOL = ["cos", "cos_gap", "cos_z", "bm25_rel", "bm25_log", "knn1", "knn3", "knn_gap", "seen"]
OLD_NONE = ["bias", "cos_max", "cos_margin", "bm25_log_max", "knn1_max", "none_knn1", "none_knn3"]


def older_file_text() -> str:
    """A model file as tooleval wrote it before transfer training and the far cut-off: the nine and seven
    features, no new field."""
    data = json.loads(hand_written_model({"r1": "a flight", "r2": "the weather"}, ["flights", "weather"], 5)
                      .model_dump_json())
    for field in ("unseen_weight", "unseen_zeroed", "far_cutoff", "far_quantile", "far_none_base"):
        del data[field]
    data["tool_features"], data["none_features"] = OLD_TOOL, OLD_NONE
    return json.dumps(data)


def test_an_older_file_loads_with_no_copies_and_no_cut_off(tmp_path):
    model = DecisionModelFile.model_validate_json(older_file_text())
    assert (model.unseen_weight, model.unseen_zeroed, model.far_cutoff, model.far_quantile) == (0.0, [], None, None)
    assert model.far_none_base is None  # a model without a learned 'none' never abstains, as it did
    path = tmp_path / "old.json"
    path.write_text(older_file_text())
    setup = router_setup("trained", None, {"model_file": "old.json"}, has_none_labels=True, base_dir=tmp_path)
    assert setup.far_cutoff is None and setup.model_hash
    newer = json.loads(older_file_text()) | {"far_cutoff": 0.383, "far_quantile": 0.05}
    path.write_text(json.dumps(newer))
    assert router_setup("trained", None, {"model_file": "old.json"}, has_none_labels=True,
                        base_dir=tmp_path).far_cutoff == 0.383


def test_an_older_files_weights_meet_the_features_they_were_fitted_on():
    tool_cols, none_cols = model_columns(OLD_TOOL, OLD_NONE)
    assert [TOOL_FEATURES[i] for i in tool_cols] == OLD_TOOL and [NONE_FEATURES[i] for i in none_cols] == OLD_NONE
    rng = np.random.default_rng(3)
    tool_x, none_x = rng.normal(size=(5, 4, len(TOOL_FEATURES))), rng.normal(size=(5, len(NONE_FEATURES)))
    mask = np.ones((5, 4), dtype=bool)
    w_tool, w_none = rng.normal(size=len(OLD_TOOL)), rng.normal(size=len(OLD_NONE))
    # the old weights on the old columns = the old weights padded with zeros for every feature added since
    padded_tool, padded_none = np.zeros(len(TOOL_FEATURES)), np.zeros(len(NONE_FEATURES))
    padded_tool[tool_cols], padded_none[none_cols] = w_tool, w_none
    np.testing.assert_allclose(utilities(tool_x[..., tool_cols], mask, none_x[:, none_cols], w_tool, w_none),
                               utilities(tool_x, mask, none_x, padded_tool, padded_none))
    assert model_columns(["cosine"], []) is None  # a hand-made file naming features this code does not compute
