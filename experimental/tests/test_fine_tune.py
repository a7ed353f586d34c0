"""``experimental/fine_tuning/fine_tune.py``: MiniLM fine-tuned on a few requests learns them, the base model is left as it
was, and a 'none' target needs the learned threshold."""

from __future__ import annotations

import pytest
import torch

from tasks.selectors.routers.embedding import DEFAULT_MODEL_ID, load_model
from experimental.fine_tuning.fine_tune import TAU_START, TuningExample, batch_loss, fine_tune

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


def test_gradient_checkpointing_changes_no_weight_and_is_off_again_after_its_batch(monkeypatch):
    """Every batch checkpointed (0) or none (inf): the same weights to the bit, dropout masks included; and
    the model is left without checkpointing once a checkpointed batch is encoded."""
    from transformers import PreTrainedModel

    base = load_model(DEFAULT_MODEL_ID)
    turned_on = []
    enable = PreTrainedModel.activation_checkpointing_enable
    monkeypatch.setattr(PreTrainedModel, "activation_checkpointing_enable",
                        lambda self, **kw: (turned_on.append(kw), enable(self, **kw))[1])
    plain, _ = fine_tune(base, EXAMPLES, epochs=2, lr=1e-4, seed=3, checkpoint_above=float("inf"))
    assert turned_on == []
    checkpointed, _ = fine_tune(base, EXAMPLES, epochs=2, lr=1e-4, seed=3, checkpoint_above=0)
    assert len(turned_on) == 2  # one batch of 6 examples an epoch, each checkpointed
    transformer = checkpointed[0].auto_model
    assert not transformer.is_activation_checkpointing and not transformer.get_input_embeddings()._forward_hooks
    for (name, a), (_, b) in zip(plain.named_parameters(), checkpointed.named_parameters()):
        assert torch.equal(a, b), name
    assert not torch.equal(next(plain.parameters()), next(base.parameters()))  # it did train
