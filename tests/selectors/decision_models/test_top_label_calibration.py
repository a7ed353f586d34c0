"""The top-label calibration of the trained decision model (conditional_logit.fit_top_label / top_label): it
recovers a known miscalibration, lowers the ECE of a router underconfident at low confidence and
overconfident at high (the MetaTool sample's pattern) on requests it was not fitted on, never changes the
chosen option, and is the identity where it has too little to go on. Files written before it load as
identity. Synthetic data: the fast tier."""

from __future__ import annotations

import json

import numpy as np
import pytest

from schemas.decision_model import DecisionModelFile
from tasks.selectors.decision_models.conditional_logit import MIN_TOP_LABEL_ROWS, fit_top_label, top_label
from tasks.stats.calibration import expected_calibration_error
from tests.factories.decision_model import hand_written_model


def flattened(n: int, slope: float, shift: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Confidences and outcomes of a router whose P(right) = sigmoid(slope * logit(confidence) + shift)."""
    rng = np.random.default_rng(seed)
    confidence = rng.uniform(0.12, 0.995, n)  # the top of ten options
    logit = np.log(confidence) - np.log1p(-confidence)
    right = rng.random(n) < 1 / (1 + np.exp(-(slope * logit + shift)))
    return confidence, right


def test_the_fit_recovers_a_known_slope_and_shift():
    slope, shift = fit_top_label(*flattened(40_000, 0.7, 0.3, seed=1))
    assert slope == pytest.approx(0.7, abs=0.03) and shift == pytest.approx(0.3, abs=0.03)


def test_a_router_underconfident_low_and_overconfident_high_is_calibrated_on_other_requests():
    confidence, right = flattened(20_000, 0.7, 0.3, seed=2)
    fit, judged = slice(0, 10_000), slice(10_000, None)
    slope, shift = fit_top_label(confidence[fit], right[fit])
    p = np.column_stack([confidence, *[(1 - confidence) / 9] * 9])  # ten options: the first is the chosen one
    calibrated = top_label(p, slope, shift)[judged, 0]
    before = expected_calibration_error(confidence[judged].tolist(), right[judged].tolist())
    after = expected_calibration_error(calibrated.tolist(), right[judged].tolist())
    assert before > 0.06 and after < 0.02, (before, after)  # 0.070 -> 0.015 (a calibrated one: ~0.01)


def test_the_chosen_option_never_changes_and_each_row_still_sums_to_one():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.full(6, 0.4), size=2_000)
    p[:50] = np.sort(p[:50], axis=1)[:, ::-1]  # and near-ties at the top
    p[:50, 1] = p[:50, 0] * 0.999
    p /= p.sum(axis=1, keepdims=True)
    for slope, shift in ((0.3, -2.0), (0.72, 0.26), (2.5, 1.0), (0.05, -5.0)):
        q = top_label(p, slope, shift)
        assert (q.argmax(axis=1) == p.argmax(axis=1)).all()
        np.testing.assert_allclose(q.sum(axis=1), 1.0)
        assert (q >= 0).all()
    assert top_label(p, 1.0, 0.0) is p
    empty = np.zeros((1, 3))
    np.testing.assert_array_equal(top_label(empty, 0.7, 0.3), empty)


def test_a_router_calibrated_already_is_left_as_it_is():
    """No miscalibration beyond chance (likelihood-ratio test at 1%): two fitted numbers would only add noise."""
    kept = [fit_top_label(*flattened(2_000, 1.0, 0.0, seed=seed)) != (1.0, 0.0) for seed in range(40)]
    assert sum(kept) <= 3  # ~1% expected
    assert fit_top_label(*flattened(2_000, 0.7, 0.3, seed=5)) != (1.0, 0.0)  # a real miscalibration is not


def test_too_few_requests_or_one_outcome_leave_the_confidence_as_it_is():
    confidence, right = flattened(MIN_TOP_LABEL_ROWS - 1, 0.5, 1.0, seed=4)
    assert fit_top_label(confidence, right) == (1.0, 0.0)
    assert fit_top_label(np.full(500, 0.6), np.ones(500, dtype=bool)) == (1.0, 0.0)


def test_a_file_written_before_it_loads_as_the_identity():
    data = json.loads(hand_written_model({"r1": "a flight", "r2": "the weather"}, ["flights", "weather"], 5)
                      .model_dump_json())
    for weights in [data["full_model"], *data["fold_models"]]:
        del weights["confidence_slope"], weights["confidence_shift"]
    model = DecisionModelFile.model_validate_json(json.dumps(data))
    assert all((w.confidence_slope, w.confidence_shift) == (1.0, 0.0) for w in [model.full_model, *model.fold_models])
