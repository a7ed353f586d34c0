"""The ECE's noise floor: what a perfectly calibrated selector shows with the same confidences on as many
requests (tasks/stats/calibration.py, ``ece_if_calibrated``)."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.stats.calibration import ece_if_calibrated, expected_calibration_error


def _requests(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.3, 1.0, n)


def test_a_calibrated_selector_on_540_requests_shows_an_ece_near_0_04_not_0():
    confidence = _requests(540, 1)
    correct = np.random.default_rng(2).random(540) < confidence  # calibrated by construction
    ids = [f"r{i}" for i in range(540)]
    floor = ece_if_calibrated(confidence, correct, ids)
    measured = expected_calibration_error(confidence, correct)
    assert 0.02 < floor.median < 0.06 and floor.median < floor.high
    assert measured > 0.01  # binned ECE is never 0 on a finite set
    assert floor.p_value > 0.05  # a calibrated selector is not called miscalibrated


def test_an_overconfident_selector_is_above_its_floor():
    confidence = _requests(540, 1)
    correct = np.random.default_rng(2).random(540) < confidence - 0.2
    floor = ece_if_calibrated(confidence, correct, [f"r{i}" for i in range(540)])
    assert expected_calibration_error(confidence, correct) > floor.high
    assert floor.p_value == 0.0


def test_the_request_is_the_unit_its_seeds_move_together():
    """Three identical rows a request (a deterministic router under three seeds) have the floor of one row a
    request, not of three times the requests; and the figure is the same on every call."""
    confidence = _requests(300, 3)
    correct = np.random.default_rng(4).random(300) < confidence
    ids = [f"r{i:03d}" for i in range(300)]
    once = ece_if_calibrated(confidence, correct, ids)
    thrice = ece_if_calibrated(np.repeat(confidence, 3), np.repeat(correct, 3), np.repeat(ids, 3))
    assert thrice.median == pytest.approx(once.median, rel=1e-9) and thrice.high == pytest.approx(once.high, rel=1e-9)
    assert thrice.p_value == once.p_value
    rows_as_requests = ece_if_calibrated(np.repeat(confidence, 3), np.repeat(correct, 3),
                                         [f"x{i}" for i in range(900)])
    assert rows_as_requests.median < once.median  # 900 independent requests are less noisy than 300
    assert ece_if_calibrated(confidence, correct, ids) == once


def test_a_large_run_gets_fewer_draws_never_fewer_than_50():
    n = 100_000
    confidence = _requests(n, 5)
    correct = np.random.default_rng(6).random(n) < confidence
    floor = ece_if_calibrated(confidence, correct, [f"r{i // 3}" for i in range(n)])
    assert floor.draws == 50 and floor.median < 0.01
    assert ece_if_calibrated([], [], []) is None


def test_the_printed_floor_does_not_move_with_the_seed_of_its_draws():
    """540 requests x 3 seeds of a deterministic router (a floor near 0.058): from one seed of the draws to
    another the 95th percentile moves by about 0.001 (200 draws moved it 0.055-0.063); the seeds of a request
    count as one column, so the default's 5,000 draws cost what 1,700 did."""
    confidence = np.repeat(_requests(540, 7), 3)
    correct = np.random.default_rng(8).random(len(confidence)) < confidence
    ids = np.repeat([f"r{i}" for i in range(540)], 3)
    highs = [ece_if_calibrated(confidence, correct, ids, seed=s).high for s in range(8)]
    assert max(highs) - min(highs) <= 0.0015 and 0.056 < min(highs)
    assert ece_if_calibrated(confidence, correct, ids).draws == 5_000


def test_the_calibration_note_says_how_many_draws_and_that_the_seed_is_fixed():
    from types import SimpleNamespace

    from tasks.selection.tables import _draws_text
    floors = [SimpleNamespace(ece_if_calibrated=SimpleNamespace(draws=d)) for d in (5_000, 2_472)]
    assert _draws_text(SimpleNamespace(calibration=floors[:1])) == "5,000 draws"
    assert _draws_text(SimpleNamespace(calibration=floors)).startswith("2,472-5,000 draws")


@pytest.mark.parametrize("cells", [1, 7_919, 10_000_000])
def test_the_draws_do_not_depend_on_how_many_are_simulated_at_once(monkeypatch, cells):
    """The random numbers are one stream: a chunk of one draw, an odd-sized chunk over an odd number of
    requests (a chunk ending inside a 64-bit word of the generator) or all draws at once give the same
    figures, bit for bit."""
    from tasks.stats import calibration

    confidence = np.repeat(_requests(301, 9), 2) + np.tile([0.0, -0.01], 301)
    correct = np.random.default_rng(10).random(len(confidence)) < confidence
    ids = np.repeat([f"r{i}" for i in range(301)], 2)
    default = ece_if_calibrated(confidence, correct, ids, draws=333)
    monkeypatch.setattr(calibration, "CALIBRATED_CHUNK_CELLS", cells)
    assert ece_if_calibrated(confidence, correct, ids, draws=333) == default
