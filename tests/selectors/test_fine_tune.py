"""``tasks/selectors/fine_tune.py``: MiniLM fine-tuned on a few requests learns them, the base model is left as it
was, and a 'none' target needs the learned threshold."""

from __future__ import annotations

import pytest
import torch

from tasks.selectors.embedding import DEFAULT_MODEL_ID, load_model
from tasks.selectors.fine_tune import TAU_START, TuningExample, batch_loss, fine_tune

pytestmark = pytest.mark.slow  # loads MiniLM and trains it

TOOLS = ("Refund an order that was charged twice", "Track where a parcel is now", "Reset an account password")
EXAMPLES = [
    TuningExample("I was billed two times for the same thing", TOOLS, 0),
    TuningExample("my card shows a double charge", TOOLS, 0),
    TuningExample("where is my package right now", TOOLS, 1),
    TuningExample("has the courier picked it up yet", TOOLS, 1),
    TuningExample("I can't log in, I forgot the secret word", TOOLS, 2),
    TuningExample("let me choose a new login code", TOOLS, 2),
]


def loss_of(model, examples, tau=None) -> float:
    with torch.inference_mode():
        return float(batch_loss(model, examples, tau))


def test_fine_tuning_learns_its_examples_and_leaves_the_base_model_alone():
    base = load_model(DEFAULT_MODEL_ID)
    first = next(base.parameters()).detach().clone()
    before = loss_of(base, EXAMPLES)
    tuned, tau = fine_tune(base, EXAMPLES, epochs=3, lr=1e-4, seed=0)
    assert tau is None
    assert loss_of(tuned, EXAMPLES) < 0.5 * before
    assert torch.equal(next(base.parameters()), first)  # a copy was trained
    assert loss_of(base, EXAMPLES) == pytest.approx(before)
    again, _ = fine_tune(base, EXAMPLES, epochs=3, lr=1e-4, seed=0)
    assert loss_of(again, EXAMPLES) == pytest.approx(loss_of(tuned, EXAMPLES), rel=1e-4)  # the seed fixes it


def test_a_none_target_needs_the_learned_threshold_and_moves_it():
    base = load_model(DEFAULT_MODEL_ID)
    with_none = EXAMPLES + [TuningExample("what is the capital of Peru", TOOLS, len(TOOLS)),
                            TuningExample("write me a poem about autumn", TOOLS, len(TOOLS))]
    with pytest.raises(ValueError, match="learn_none"):
        fine_tune(base, with_none, epochs=1)
    with pytest.raises(ValueError, match="epochs"):
        fine_tune(base, EXAMPLES, epochs=0)
    tuned, tau = fine_tune(base, with_none, epochs=3, lr=1e-4, seed=0, learn_none=True)
    assert tau is not None and tau != pytest.approx(TAU_START, abs=1e-3)
    assert loss_of(tuned, with_none, torch.tensor(tau)) < loss_of(base, with_none, torch.tensor(TAU_START))
