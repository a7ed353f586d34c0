"""Fine-tuning a sentence encoder on a task set's own requests: the recipe of
``benchmarks/fine_tuned_encoder.py`` as a plain function: ``tooleval train --fine-tune`` fine-tunes one encoder
per fold model as it cross-fits, and one on every request (``product_experts.py``).

The loss, per request: the cross-entropy of a softmax over the cosines (x ``SCALE``) of the request to each of
its offered tools' texts, the right tool the target. With ``learn_none`` one more option joins the softmax, a
learned threshold tau (x ``SCALE``, the same for every request, its own learning rate ``TAU_LR``), the target
of a request labelled 'none'. AdamW, batches of ``BATCH`` requests, shuffled per epoch by ``seed``.

Fine-tuned on four folds, the cosine of the fifth reads well above MiniLM's own held out, at minutes of CPU a
fold (docs/measured/decision-models.md, "A MiniLM fine-tuned on the set's own requests").

Memory: a batch's texts are encoded together, padded to its longest (up to 256 tokens), and every layer's
activations are kept for the backward pass, so memory grows with a batch's padded tokens and a batch of long
texts dominates the peak. A batch above ``CHECKPOINT_ABOVE`` padded
tokens is encoded with gradient checkpointing (each layer's activations computed again in the backward pass,
dropout masks included): the same loss and gradients to the bit (a test trains both ways), about half the
peak memory for a little more time (docs/measured/decision-models.md, "Fine-tuning's memory").
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Any, Sequence

SCALE = 20.0
"""Cosine scale of the training softmax (a temperature of 0.05, the embedding router's own)."""
BATCH = 16
TAU_LR = 1e-2
TAU_START = 0.5
CHECKPOINT_ABOVE = 8192
"""Padded tokens (texts x the longest's tokens) above which a batch is encoded with gradient checkpointing."""


@dataclass(frozen=True)
class TuningExample:
    """One request to learn from: its text, its offered tools' texts, and the target (the right tool's
    position; ``len(documents)`` for 'none')."""

    query: str
    documents: tuple[str, ...]
    target: int


def encode(model: Any, texts: Sequence[str], checkpoint_above: float = CHECKPOINT_ABOVE) -> Any:
    """Unit-length sentence embeddings of ``texts`` as a torch tensor, with gradients when the model trains;
    with gradient checkpointing when the model trains and the padded texts hold more than ``checkpoint_above``
    tokens (the same values and gradients, less memory)."""
    import torch

    features = model.preprocess(list(texts)) if hasattr(model, "preprocess") else model.tokenize(list(texts))
    transformer = getattr(model[0], "auto_model", None) if len(model) else None
    checkpoint = (model.training and transformer is not None and transformer.supports_gradient_checkpointing
                  and features["input_ids"].numel() > checkpoint_above)
    if checkpoint:
        transformer.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    try:
        return torch.nn.functional.normalize(model(dict(features))["sentence_embedding"], dim=-1)
    finally:
        if checkpoint:  # off again, and the embeddings' hook that enabling added removed
            transformer.activation_checkpointing_disable()
            transformer.disable_input_require_grads()


def batch_loss(model: Any, batch: Sequence[TuningExample], tau: Any | None,
               checkpoint_above: float = CHECKPOINT_ABOVE) -> Any:
    """Mean cross-entropy of the batch (one encoder pass over the distinct request and tool texts in it: on a
    shared catalogue every request offers the same tools, encoded once for the batch, not once per request)."""
    import torch

    position: dict[str, int] = {}
    spans = []
    for example in batch:
        rows = [position.setdefault(text, len(position)) for text in (example.query, *example.documents)]
        spans.append((rows[0], rows[1:], example.target))
    vectors = encode(model, list(position), checkpoint_above)
    losses = []
    for query, documents, target in spans:
        scores = vectors[documents] @ vectors[query]
        if tau is not None:
            scores = torch.cat([scores, tau[None]])
        losses.append(torch.nn.functional.cross_entropy((SCALE * scores)[None], torch.tensor([target])))
    return sum(losses) / len(spans)


def fine_tune(base: Any, examples: Sequence[TuningExample], *, epochs: int = 2, lr: float = 3e-5, seed: int = 0,
              learn_none: bool = False, checkpoint_above: float = CHECKPOINT_ABOVE) -> tuple[Any, float | None]:
    """A copy of the SentenceTransformer ``base`` fine-tuned on ``examples`` (``base`` is left as it was), and
    the learned tau (None unless ``learn_none``). A 'none' target needs ``learn_none``. ``checkpoint_above``:
    the batches encoded with gradient checkpointing (by padded tokens; 0 = every one, inf = none), which
    changes the memory and the time, not the result."""
    import torch

    if epochs < 1 or lr <= 0:
        raise ValueError(f"epochs must be >= 1 and lr > 0, got {epochs} and {lr}")
    if not learn_none and any(e.target >= len(e.documents) for e in examples):
        raise ValueError("an example's target is 'none' (or no tool is offered): fine-tune with learn_none")
    model = copy.deepcopy(base)
    tau = torch.nn.Parameter(torch.tensor(TAU_START))
    groups: list[dict[str, Any]] = [{"params": model.parameters()}]
    if learn_none:
        groups.append({"params": [tau], "lr": TAU_LR, "weight_decay": 0.0})
    optimiser = torch.optim.AdamW(groups, lr=lr)
    order = random.Random(seed)
    torch.manual_seed(seed)
    rows = list(examples)
    for _ in range(epochs):
        model.train()
        order.shuffle(rows)
        for start in range(0, len(rows), BATCH):
            loss = batch_loss(model, rows[start:start + BATCH], tau if learn_none else None, checkpoint_above)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    model.eval()
    return model, (float(tau.item()) if learn_none else None)
