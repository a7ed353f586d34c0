"""The product of two experts a decision model carries when trained with ``tooleval train --fine-tune``: the
logit's calibrated probabilities p and the softmax q of the cosines under a sentence encoder fine-tuned on the
same requests (``fine_tune.py``), combined as ``WEIGHT x log p + (1 - WEIGHT) x log q`` over the offered tools
and 'none', then calibrated on held-out products like the logit (a temperature, then the chosen option's
probability).

q is the embedding router's own softmax (``abstain_softmax``) at the fine-tuning's scale (x 20), with the
learned threshold tau as 'none' when the requests had 'none' labels (else q gives 'none' nothing and the
product never picks it). The rule (equal weights, nothing fitted but the calibration) was fixed before it was
first measured (``benchmarks/fine_tuned_encoder.py``): on BFCL live_multiple, held out, the product read above
both the fine-tuned cosine alone and the logit (docs/measured/decision-models.md).

Cross-fitting holds for the encoder as for the logit: fold model k's encoder is fine-tuned on every fold but k,
so a request of the training version is scored by a logit and an encoder that never saw it. Each encoder is
saved in a folder named by its files' fingerprint (``<model>.encoders/fold-K-<hash>``): another training
writes other folders, so no cache (per process or on disk, both keyed by the folder) can serve old vectors.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from schemas.decision_model import DecisionModelFile
from tasks.selectors.base import SelectionInput
from tasks.selectors.offline import NEVER_ABSTAIN, offline_selector
from tasks.selectors.routers.router_scores import abstain_softmax

WEIGHT = 0.5
"""The logit's share of the product (the encoder's is the rest)."""


def expert_cosines(inputs: Sequence[SelectionInput], encoder: str) -> list[np.ndarray]:
    """Each input's cosine to each of its offered tools under ``encoder`` (the embedding router's texts; empty
    for an empty request or no tools)."""
    router = offline_selector("embedding", encoder, NEVER_ABSTAIN)
    return [np.zeros(0) if c is None else np.asarray(c, dtype=np.float64) for c in router.scores(list(inputs))]


def product_utilities(p: np.ndarray, cosines: Sequence[np.ndarray], tau: float | None, scale: float,
                      weight: float = WEIGHT) -> np.ndarray:
    """rows x (tools + 'none'), 'none' last and unused tool columns -inf: ``weight x log p + (1 - weight) x
    log q``, q the softmax of ``scale`` x the row's cosines with ``tau`` for 'none'. A row without tools is
    'none' for certain (0 there)."""
    out = np.full(p.shape, -np.inf)
    with np.errstate(divide="ignore"):
        log_p = np.log(p)
    for r, cos in enumerate(cosines):
        t = len(cos)
        if t == 0:
            out[r, -1] = 0.0
            continue
        q, _ = abstain_softmax(np.asarray(cos, dtype=np.float64)[None], -np.inf if tau is None else tau, 1 / scale)
        with np.errstate(divide="ignore"):
            log_q = np.log(q[0])
        out[r, :t] = weight * log_p[r, :t] + (1 - weight) * log_q[:t]
        out[r, -1] = weight * log_p[r, -1] + (1 - weight) * log_q[-1] if np.isfinite(log_q[-1]) else -np.inf
    return out


def logit_only(model: DecisionModelFile) -> DecisionModelFile:
    """The same model without its fine-tuned experts: the logit alone (for comparing the two)."""
    return model.model_copy(update={
        "fold_models": [w.model_copy(update={"expert": None}) for w in model.fold_models],
        "full_model": model.full_model.model_copy(update={"expert": None})})


@dataclass(frozen=True)
class TunedEncoder:
    """A fine-tuned encoder as saved: its folder (absolute), files' fingerprint, learned tau, requests learned."""

    folder: Path
    fingerprint: str
    tau: float | None
    trained_on: int


def tuning_examples(base_encoder: str, inputs: Sequence[SelectionInput], targets: Sequence[int]) -> list:
    """The fine-tuning examples of ``inputs``: the embedding router's request and tool texts and the target (the
    label's position among the offered tools, or their count for 'none'); inputs without tools are skipped."""
    from experimental.fine_tuning.fine_tune import TuningExample

    router = offline_selector("embedding", base_encoder, NEVER_ABSTAIN)
    return [TuningExample(router.request_text(item), tuple(router.document(t) for t in item.tools), int(target))
            for item, target in zip(inputs, targets) if item.tools]


def fine_tune_encoder(base_encoder: str, inputs: Sequence[SelectionInput], targets: Sequence[int],
                      folder: Path, name: str, *, learn_none: bool, epochs: int, lr: float, seed: int) -> TunedEncoder:
    """Fine-tune ``base_encoder`` on ``inputs`` (``tuning_examples``) and save it as
    ``folder/<name>-<fingerprint>``."""
    from tasks.selectors.routers.embedding import load_model
    from tasks.selectors.routers.embedding_store import files_fingerprint
    from experimental.fine_tuning.fine_tune import fine_tune

    examples = tuning_examples(base_encoder, inputs, targets)
    model, tau = fine_tune(load_model(base_encoder), examples, epochs=epochs, lr=lr, seed=seed,
                           learn_none=learn_none)
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder))
    staging.chmod(0o777 & ~_umask())  # mkdtemp makes it 0700: readable by whoever may read the model file
    try:
        _save_quietly(model, staging)
        fingerprint = files_fingerprint(str(staging))
        final = folder / f"{name}-{fingerprint[:12]}"
        if final.exists():  # the same weights again (same requests, same seed): keep the folder there
            shutil.rmtree(staging)
        else:
            staging.rename(final)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return TunedEncoder(final, fingerprint, tau, len(examples))  # the fingerprint hashes contents, not the path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _save_quietly(model, folder: Path) -> None:
    """``model.save`` without transformers' progress bar ('Writing model shards') on the user's terminal."""
    from transformers.utils import logging as transformers_logging

    bars_were_on = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        model.save(str(folder))
    finally:
        if bars_were_on:
            transformers_logging.enable_progress_bar()


def remove_unlisted(folder: Path, kept: Sequence[Path]) -> None:
    """Remove the encoder folders under ``folder`` that the model file just written does not name (an earlier
    training's, or a staging folder a killed one left)."""
    keep = {Path(k).resolve() for k in kept}
    if not folder.is_dir():
        return
    for child in folder.iterdir():
        if child.is_dir() and child.resolve() not in keep:
            shutil.rmtree(child, ignore_errors=True)
