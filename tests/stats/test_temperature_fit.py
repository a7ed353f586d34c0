"""A softmax temperature fitted on one half of labelled requests (tasks/stats/calibration.py): tempering keeps
every pick, and the fit moves an over- or under-confident router's confidence towards its accuracy."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.stats.calibration import expected_calibration_error, fit_temperature, tempered_probabilities


def router(n: int, seed: int, sharpness: float) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities over four options (the 'pick' is the largest) whose calibrated form is sharpened by
    ``sharpness`` (> 1 over-confident, < 1 under-confident), and whether each pick was right, drawn from the
    calibrated probabilities."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 1.5, size=(n, 4))
    calibrated = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    right = rng.random(n) < calibrated.max(axis=1)
    shown = tempered_probabilities(calibrated, 1.0 / sharpness)
    return shown, right


def test_tempering_keeps_the_pick_and_sums_to_one():
    p = np.array([[0.6, 0.3, 0.1, 0.0], [0.25, 0.25, 0.5, 0.0]])
    for t in (0.2, 1.0, 5.0):
        q = tempered_probabilities(p, t)
        assert q.sum(axis=1) == pytest.approx([1.0, 1.0])
        assert (q.argmax(axis=1) == p.argmax(axis=1)).all() and (q[:, 3] == 0.0).all()
    np.testing.assert_allclose(tempered_probabilities(p, 1.0), p)
    assert tempered_probabilities(p, 5.0)[0, 0] < 0.6 < tempered_probabilities(p, 0.2)[0, 0]


@pytest.mark.parametrize("sharpness, direction", [(3.0, 1), (0.4, -1)])
def test_the_fitted_temperature_calibrates_the_other_half(sharpness, direction):
    fit_p, fit_right = router(1500, 1, sharpness)
    confirm_p, confirm_right = router(1500, 2, sharpness)
    temperature = fit_temperature(fit_p, fit_right)
    assert np.sign(np.log(temperature)) == direction  # softer when over-confident, sharper when under
    assert temperature == pytest.approx(sharpness, rel=0.25)
    before = expected_calibration_error(confirm_p.max(axis=1), confirm_right)
    after = expected_calibration_error(tempered_probabilities(confirm_p, temperature).max(axis=1), confirm_right)
    assert before > 0.08 and after < 0.04


def test_a_calibrated_router_keeps_about_its_temperature_and_rows_of_any_width():
    p, right = router(3000, 3, 1.0)
    assert fit_temperature(p, right) == pytest.approx(1.0, rel=0.15)
    rows = [[0.9, 0.1], [0.5, 0.3, 0.2], [1.0]]  # a request offered no tool: 'none' at 1 whatever the temperature
    assert 0.0 < fit_temperature(rows, [True, False, True]) < np.inf
