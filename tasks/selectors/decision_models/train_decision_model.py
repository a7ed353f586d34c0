"""``tooleval train``: learn a decision model from a task-set version's labelled requests and write its file.

The model is a conditional logit over (request, tool) features (``decision_features.py``) fitted with
``conditional_logit.py``. Cross-fitting: each request falls in one of K folds by a hash of its normalised
text (duplicates share a fold); model k learns from every fold but k (its kNN features look up no example of
fold k) and scores fold k's requests when the same version is run; the full model learns from every request
and scores requests it never saw. Calibration: model k's temperature is fitted on the held-out (cross-fitted)
utilities of the *other* folds, so no request is calibrated on its own prediction; the full model's on all
of them. Then, the same way, a top-label calibration of the chosen option's probability (slope and shift on
its logit, ``conditional_logit.fit_top_label``): the temperature alone left the MetaTool sample
underconfident below 0.5 and overconfident above 0.9 (ECE 0.038, over the 0.022 a calibrated router shows
there); with it 0.013.

Transfer copies (``unseen_weight`` > 0): each request is learned from a second time with the features it
would have if its tools had no labelled examples (``decision_features.as_unseen``), weighing
``unseen_weight`` against the original's 1. Without them the model only ever sees requests whose tools
have examples: a tool without examples loses its kNN features (~+4 on the support set) while 'none' keeps
its bias, so it abstains on a domain it has no examples for. The fit is in two steps: the weights on the
requests alone (as without copies), then, those held, the weights of the unseen-tool and no-example
features (``TRANSFER_FREE``) on the requests and their copies; so the copies change nothing on requests
whose tools have examples (the support set's cross-fitted figures stay as they were). A copy belongs to its
request's fold; the held-out figures score the originals only.

The embedding probe (``embedding_probe.py``): a multinomial logistic regression from the request's embedding
to its label, whose log-probabilities are features. It is cross-fitted one level deeper (``FoldProbes``):
the features a fold model learns from come from probes that never saw the request's fold nor the held-out
one. Its fits and the logit's run on one BLAS thread (``blas_threads.py``); the probes, which do not
depend on one another, are all fitted first, one per core (``FoldProbes.fit_cross_fitted``).

The far cut-off: the ``FAR_QUANTILE`` quantile of the held-out requests' nearest-example cosines (each
request against the examples of the other folds): a request whose nearest example is less similar than that
is far from what the model learned from (the report counts them). Far from the examples and the tools, the
'none' utility rises (``far_abstention.py``); a model whose examples had no 'none' label gets a constant
'none' base for that rise to lift, fitted with it (``fit_base_and_slope``).

Fine-tuned experts (``fine_tune=True``, ``tooleval train --fine-tune``): after the logit, the encoder is
fine-tuned once per fold (on every fold but k, as model k) and once on every request (experimental:
``experimental/fine_tuning/product_experts.py``, in a checkout only);
each request's held-out product is fold k's calibrated p with fold k's fine-tuned cosine, and the product's
own calibration (temperature, top label) is fitted on those the way the logit's is. ``cross_fitted`` is then
the product's, ``cross_fitted_logit`` the logit's. Reads files only: no Prefect, no warehouse.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

import numpy as np

from schemas.catalogue import NONE_LABEL, ToolSpec
from schemas.decision_model import DecisionModelFile, ExpertWeights, LogitWeights
from tasks.files.atomic_write import write_atomic
from tasks.files.input_errors import InputError
from tasks.files.write_probe import nearest_existing
from tasks.selectors.decision_models.conditional_logit import (
    NONE_INDEX,
    fit_logit,
    fit_temperature,
    fit_top_label,
    softmax,
    top_label,
    utilities,
)
from tasks.selectors.decision_models.decision_features import (
    EXAMPLE_NONE_FEATURES,
    EXAMPLE_TOOL_FEATURES,
    NO_EXAMPLES_NONE_FEATURES,
    NONE_FEATURES,
    TOOL_FEATURES,
    UNSEEN_TOOL_FEATURES,
    Examples,
    ProbeScores,
    make_unseen,
    feature_arrays_with_nearest,
    text_hash,
)
from tasks.selectors.decision_models.example_text import DEFAULT_CONTEXT_TURNS
from tasks.selectors.routers.conversation import parse_context_turns
from tasks.selectors.routers.embedding import DEFAULT_MODEL_ID, encoder_id
from tasks.selectors.decision_models.embedding_probe import PROBE_C, Probe, fit_probes
from tasks.selectors.decision_models.far_abstention import (
    far_boost,
    fit_base_and_slope,
    fit_far_slope,
    typical_tool_cosine,
)
from tasks.selectors.routers.embedding_store import files_fingerprint
from tasks.selectors.decision_models.labelled_inputs import catalogue_union, labelled_inputs
from tasks.selectors.decision_models.base_scores import request_texts, router_scores
from tasks.stats.calibration import expected_calibration_error
from tasks.taskset.load_taskset import load_version

DEFAULT_FOLDS = 5
DEFAULT_SALT = "tooleval-folds-v1"
DEFAULT_L2 = 1e-3
DEFAULT_UNSEEN_WEIGHT = 1.0
"""Weight of each request's transfer copy (0 = no copies): see the module docstring and docs/routing."""
FAR_QUANTILE = 0.05
"""The far cut-off is this quantile of the held-out nearest-example cosines (5%: one training request in
twenty is as far from the other folds' examples)."""
METHOD = ("conditional logit over MiniLM cosine, BM25, kNN-to-labelled-examples and embedding-probe features per "
          "(request, tool), 'none' as an option of its own; temperature-scaled on cross-fitted held-out predictions")

PRODUCT_METHOD = ("; times the softmax of the cosine under an encoder fine-tuned on the same requests (0.5 log p + "
                  "0.5 log q), calibrated on held-out products")

MIN_OUTSIDE_MAJORITY = 2
"""A training set needs two labels or more and at least this many requests outside its most common label (rule
train-classes): on one label every figure (accuracy, ECE) is trivially perfect and the model learns nothing."""
SEEDS_PER_DRAW = 1000
"""Encoder k of fine-tuning draw d is seeded 1000 d + k: draws never share a seed while a file has < 1,000."""
FINE_TUNE_EPOCHS = 2
FINE_TUNE_LR = 3e-5
"""Epochs and learning rate of each fine-tuning (experimental, ``--fine-tune``)."""


def fold_of(hashed_text: str, folds: int, salt: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{salt}:{hashed_text}".encode()).digest()[:8], "big") % folds


@dataclass(frozen=True)
class TrainedModel:
    model: DecisionModelFile
    path: Path

    def lines(self) -> list[str]:
        m, cv = self.model, self.model.cross_fitted
        figures = (("the product's " if m.full_model.expert is not None else "")
                   + f"accuracy {100 * cv['accuracy']:.1f}%, ECE {cv['ece']:.3f}, log-loss {cv['nll']:.3f}")
        if m.folds > 1:
            folds = [f"  {m.folds} folds; cross-fitted (each request scored by a model that never",
                     f"  saw it): {figures}"]
        else:  # one model on every request; the figures come from the folds its temperature was fitted on
            folds = ["  1 fold: one model learned from every request, not cross-fitted (it refuses to score",
                     f"  them); held out in a {DEFAULT_FOLDS}-fold check: {figures}"]
        return [
            f"trained a decision model on {m.taskset} {m.version}: {len(m.example_ids)} labelled requests,",
            *folds,
            *([] if m.embedding_model == DEFAULT_MODEL_ID else [f"  encoder: {m.embedding_model}"]),
            f"  calibration (full model): temperature {m.full_model.temperature:.3f}, then the chosen",
            f"  option's logit x {m.full_model.confidence_slope:.2f} {m.full_model.confidence_shift:+.2f}; 'none' "
            + ("learned" if m.full_model.none is not None else "not learned (no 'none' label)" if m.far_none_base
               is not None else "never chosen (no 'none' label)"),
            "  transfer copies: " + (f"weight {m.unseen_weight:g} (tools without examples: cosine, BM25)"
                                     if m.unseen_weight > 0 else "none"),
            *([f"  embedding probe: C {m.probe_c:g}, cross-fitted (no request's probe saw its fold)"]
              if m.probe_c is not None and m.full_model.probe is not None else []),
            *([f"  context: the last user turn after {m.context_turns} earlier turn(s) of the conversation"]
              if m.context_turns else []),
            *self.expert_lines(),
            "  far cut-off: " + ("none recorded" if m.far_cutoff is None else
                                 f"nearest-example cosine {m.far_cutoff:.3f} ({100 * (m.far_quantile or 0):g}% of "
                                 "held-out requests below)"),
            *([f"  far from the examples and the tools: 'none' rises {m.far_slope:.0f} x the gap below the",
               f"  cut-off x the gap below best-tool cosine {m.far_tool_cosine:.3f}"]
              if m.far_slope and m.far_tool_cosine is not None else []),
            *([f"  no 'none' label: the rise lifts 'none' from utility {m.far_none_base:.2f}, the base",
               "  fitted with the slope (the most far requests abstaining within the budgets)"]
              if m.far_none_base is not None and m.full_model.none is None else []),
            f"wrote {self.path}",
            "use it: selector: trained, model: tooleval-hybrid,",
            "  options: {model_file: <this file, relative to the experiment>}",
        ]

    def expert_lines(self) -> list[str]:
        m, expert = self.model, self.model.full_model.expert
        if expert is None:
            return []
        logit = m.cross_fitted_logit or {}
        return [f"  fine-tuned experts: {len(m.fold_models) + 1} encoders in {Path(expert.encoder).parent}/ "
                f"({expert.epochs} epoch(s), lr {expert.lr:g}" + (f", draw {expert.seed}" if expert.seed else "")
                + ");",
                f"  scored by {expert.weight:g} log p(logit) + {1 - expert.weight:g} log q(encoder cosine"
                + (f", tau {expert.tau:.3f} as 'none'" if expert.tau is not None else "") + ");",
                f"  the logit alone, cross-fitted: accuracy {100 * logit.get('accuracy', float('nan')):.1f}%, "
                f"ECE {logit.get('ece', float('nan')):.3f}",
                f"  product calibration: temperature {expert.temperature:.3f}, then x "
                f"{expert.confidence_slope:.2f} {expert.confidence_shift:+.2f}"]


TRANSFER_FREE = np.array([f in UNSEEN_TOOL_FEATURES for f in TOOL_FEATURES]
                         + [f in NO_EXAMPLES_NONE_FEATURES for f in NONE_FEATURES])
"""The weights the transfer copies fit (over tool then 'none' features): those of the unseen-tool and
no-example repeats. The others are fitted on the requests alone first and held, so the copies cannot bend
how the model scores tools it has examples of (the support set's own figures stay as they were)."""


def with_unseen_copies(tool_x: np.ndarray, mask: np.ndarray, none_x: np.ndarray, labels: np.ndarray,
                       weight: float, rows: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """(tool features, mask, 'none' features, labels, row weights) to fit on: the rows as given (weight 1;
    only ``rows`` when given), then, when ``weight`` > 0, each of them again as if no labelled example existed
    (``as_unseen``) at ``weight``; row weights None when there are no copies. The copies are written straight
    into the array returned (no copy of the features is made and then concatenated: at MetaTool's 199 tools
    a copy is large, docs/measured/decision-models.md, "Training's memory")."""
    rows = np.ones(len(labels), dtype=bool) if rows is None else np.asarray(rows, dtype=bool)
    m = int(rows.sum())
    copies = 2 if weight > 0 else 1
    tools = np.empty((copies * m, *tool_x.shape[1:]), dtype=tool_x.dtype)
    nones = np.empty((copies * m, none_x.shape[1]), dtype=none_x.dtype)
    np.compress(rows, tool_x, axis=0, out=tools[:m])
    np.compress(rows, none_x, axis=0, out=nones[:m])
    masks, kept_labels = np.tile(mask[rows], (copies, 1)), np.tile(labels[rows], copies)
    if weight <= 0:
        return tools, masks, nones, kept_labels, None
    tools[m:], nones[m:] = tools[:m], nones[:m]
    make_unseen(tools[m:], nones[m:], masks[m:])
    return tools, masks, nones, kept_labels, np.r_[np.ones(m), np.full(m, weight)]


def fit_with_transfer(tool_x: np.ndarray, mask: np.ndarray, none_x: np.ndarray, labels: np.ndarray,
                      with_none: bool, l2: float, unseen_weight: float,
                      rows: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """The weights, learned from ``rows`` (default all): fitted on the requests; then, with ``unseen_weight``
    > 0, the unseen-tool and no-example weights (``TRANSFER_FREE``) fitted on the requests and their transfer
    copies, the others held. The requests' fit reads the first half of the copies' array (a view)."""
    return fit_copies(*with_unseen_copies(tool_x, mask, none_x, labels, unseen_weight, rows), with_none, l2)


def fit_copies(tools: np.ndarray, masks: np.ndarray, nones: np.ndarray, kept_labels: np.ndarray,
               weights: np.ndarray | None, with_none: bool, l2: float) -> tuple[np.ndarray, np.ndarray | None]:
    """``fit_with_transfer`` on the rows ``with_unseen_copies`` built (the requests, then their copies)."""
    m = len(kept_labels) // (2 if weights is not None else 1)
    w_tool, w_none = fit_logit(tools[:m], masks[:m], nones[:m], kept_labels[:m], with_none, l2)
    if weights is None:
        return w_tool, w_none
    return fit_logit(tools, masks, nones, kept_labels, with_none, l2, weights, (w_tool, w_none, TRANSFER_FREE))


class FoldProbes:
    """The embedding probes of a cross-fitted training, each fitted once on the usable requests outside a set
    of folds (``embedding_probe.py``). A request's probe features never come from a probe that learned from
    its own fold: model k (which learns from every fold but k) sees the requests of fold j through the probe
    fitted without folds k and j, and scores its held-out fold k through the one fitted without k, which is
    also the probe it keeps in the model file; the full model sees fold j through the probe without j and
    keeps the probe fitted on every request. 5 folds: 16 probes."""

    def __init__(self, embeddings: np.ndarray, labels: np.ndarray, fold: np.ndarray, usable: np.ndarray) -> None:
        self.embeddings, self.labels, self.fold, self.usable = embeddings, labels, fold, usable
        self.all_labels = tuple(sorted({str(label) for label in labels[usable]}))
        self._fitted: dict[frozenset[int], Probe | None] = {}

    def probe(self, without: frozenset[int]) -> Probe | None:
        """The probe fitted on the usable requests of every fold not in ``without`` (None: fewer than 2 labels)."""
        if without not in self._fitted:
            self.fit_all([without])
        return self._fitted[without]

    def fit_all(self, wanted: list[frozenset[int]], workers: int = 1) -> None:
        """Fit the probes without each fold set of ``wanted`` not fitted yet, ``workers`` at a time (the same
        probes as one by one: ``fit_probes``)."""
        wanted = [without for without in dict.fromkeys(wanted) if without not in self._fitted]
        data = []
        for without in wanted:
            rows = self.usable & ~np.isin(self.fold, list(without))
            data.append((self.embeddings[rows], self.labels[rows].astype(str)))
        self._fitted.update(zip(wanted, fit_probes(data, PROBE_C, workers)))

    def fit_cross_fitted(self, folds: int) -> None:
        """Fit every probe a training of ``folds`` folds asks for at once, on the cores this process may use:
        the full model's, and per fold k the one without k and those without k and each other fold."""
        present = [int(j) for j in np.unique(self.fold)]
        wanted = [frozenset(), *(frozenset({j}) for j in present),
                  *(frozenset({j, k}) for k in range(folds) for j in [*present, k])]
        self.fit_all(wanted, usable_cores())

    def scores(self, exclude: int | None) -> ProbeScores:
        """Model ``exclude``'s probe features' input for every request (None: the full model)."""
        column = {label: j for j, label in enumerate(self.all_labels)}
        out = np.full((len(self.labels), len(self.all_labels)), np.nan)
        for j in np.unique(self.fold):
            rows = self.fold == j
            probe = self.probe(frozenset({int(j)} | ({exclude} if exclude is not None else set())))
            if probe is not None:
                out[np.ix_(rows, [column[c] for c in probe.classes])] = probe.log_proba(self.embeddings[rows])
        return ProbeScores(self.all_labels, out)


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _label_index(tools: tuple[ToolSpec, ...], label: str) -> int:
    return NONE_INDEX if label == NONE_LABEL else [t.name for t in tools].index(label)


def train_decision_model(version_path: Path, out: Path, *, catalogues: list[str] | None = None,
                         folds: int = DEFAULT_FOLDS, salt: str = DEFAULT_SALT, l2: float = DEFAULT_L2,
                         unseen_weight: float = DEFAULT_UNSEEN_WEIGHT, encoder: str = DEFAULT_MODEL_ID,
                         fine_tune: bool = False, fine_tune_epochs: int = FINE_TUNE_EPOCHS,
                         fine_tune_lr: float = FINE_TUNE_LR, fine_tune_seed: int = 0,
                         context_turns: int | None = None, progress: Callable[[str], None] | None = None
                         ) -> TrainedModel:
    """Learn from ``<taskset>/<version>.jsonl`` and write the model file ``out``; InputError for bad input.
    ``encoder``: the sentence-embedding model of the cosine, kNN and probe features (the packaged MiniLM, or a
    local sentence-transformers directory, recorded in the file by its absolute path). ``fine_tune``: also
    fine-tune that encoder per fold model and for the full model (``experimental/fine_tuning``), saved beside the
    file in ``<out without .json>.encoders/``; the model then scores by the product of the two experts.
    ``fine_tune_seed``: which draw of the fine-tuning (each encoder's shuffles and initial state; 0 is the
    default, another number trains other encoders on the same requests, to see how far a draw moves the
    figures). ``context_turns``: the turns of each conversation read before its last user turn (the routers'
    option; recorded in the file, and the model scores with the same; default ``DEFAULT_CONTEXT_TURNS``, 0 with
    ``fine_tune``). ``progress`` hears a line before each fine-tuning (minutes each)."""
    version_path, out = Path(version_path), Path(out)
    if version_path.suffix != ".jsonl" or not version_path.is_file():
        raise InputError.one(str(version_path), "", "file-exists", "give a task-set version file such as "
                             "tasksets/x/v1.jsonl")
    if folds < 1:
        raise InputError.one(str(version_path), "", "folds", "--folds must be 1 (no cross-fitting) or more")
    if not (np.isfinite(unseen_weight) and unseen_weight >= 0):
        raise InputError.one(str(version_path), "", "unseen-weight", "--unseen-weight must be 0 (no transfer copies) "
                             "or more")
    try:
        encoder = encoder_id(encoder)
    except ValueError as error:
        raise InputError.one(str(encoder), "", "encoder", str(error)) from None
    if fine_tune and not (fine_tune_epochs >= 1 and fine_tune_lr > 0):
        raise InputError.one(str(version_path), "", "fine-tune", "--fine-tune-epochs must be 1 or more and "
                             "--fine-tune-lr above 0")
    if context_turns is None:  # the measured default (docs/measured/conversations.md); fine-tuning reads one turn
        context_turns = 0 if fine_tune else DEFAULT_CONTEXT_TURNS
    try:
        parse_context_turns(context_turns)
    except ValueError as error:
        raise InputError.one(str(version_path), "", "context-turns", f"--context-turns: {error}") from None
    if fine_tune and context_turns:
        raise InputError.one(str(version_path), "", "context-turns", "--fine-tune reads the last user turn alone: "
                             "leave --context-turns out with it")
    if fine_tune_seed < 0 or (fine_tune_seed and not fine_tune):
        raise InputError.one(str(version_path), "", "fine-tune", "--fine-tune-seed must be 0 or more, and it "
                             "needs --fine-tune")
    if out.is_dir() or out.suffix != ".json":
        raise InputError.one(str(out), "", "out-file", "--out is the model file to write, e.g. models/hybrid.json")
    parent = nearest_existing(out.parent)
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise InputError.one(str(out), "", "out-file", f"cannot write under {parent}: choose another --out")
    taskset_dir, version_name = version_path.parent, version_path.stem
    version = load_version(taskset_dir, version_name)
    shared, offered_as = catalogue_union(taskset_dir, catalogues)
    inputs, effective = labelled_inputs(version.table, shared, offered_as=offered_as)
    labels = [_label_index(item.tools, label) for item, label in zip(inputs, effective)]
    y = np.asarray(labels)
    with_none = bool((y == NONE_INDEX).any())
    usable = np.array([bool(item.tools) or with_none for item in inputs])
    if usable.sum() < max(2 * folds, 10):
        raise InputError.one(str(version_path), "", "train-size", f"{int(usable.sum())} usable labelled requests: too "
                             f"few to learn from with {folds} folds")

    label_names = np.array([NONE_LABEL if i == NONE_INDEX else item.tools[i].name for item, i in zip(inputs, labels)],
                           dtype=object)
    classes = Counter(label_names[usable].tolist())
    outside = int(usable.sum()) - max(classes.values())
    if len(classes) < 2 or outside < MIN_OUTSIDE_MAJORITY:
        shown = ", ".join(f"{name} {count}" for name, count in classes.most_common(5))
        raise InputError.one(str(version_path), "", "train-classes",
                             f"the labelled requests name {len(classes)} label(s) ({shown}): a decision model learns "
                             f"to tell labels apart, so it needs at least two, with at least {MIN_OUTSIDE_MAJORITY} "
                             f"requests outside the most common one ({outside} are)")

    scores, query = router_scores(inputs, encoder, context_turns)
    texts = request_texts(inputs, context_turns)  # the text it learns from is the text it will score
    hashes = [text_hash(text) for text in texts]
    cv = folds if folds > 1 else DEFAULT_FOLDS  # folds = 1 still calibrates on cross-fitted predictions
    fold = np.array([fold_of(h, cv, salt) for h in hashes])
    examples = Examples(query, label_names, np.asarray(hashes, dtype=object), fold)
    probes = FoldProbes(query, label_names, fold, usable)
    probes.fit_cross_fitted(cv)

    def fit(exclude: int | None, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, tuple, np.ndarray]:
        *arrays, nearest = feature_arrays_with_nearest(scores, query, hashes, examples, exclude,
                                                       probes.scores(exclude))
        # the kept requests (and their transfer copies: same rows, so a copy stays in its request's fold)
        built = with_unseen_copies(*arrays, y, unseen_weight, rows & usable)
        if exclude is None:  # the full model scores nothing here: its features go before its fit
            arrays = []
        w_tool, w_none = fit_copies(*built, with_none, l2)
        return w_tool, w_none, tuple(arrays), nearest

    width = max(len(s.tools) for s in scores)
    held_out_u = np.full((len(inputs), width + 1), -np.inf)
    fold_weights: list[tuple[np.ndarray, np.ndarray | None]] = []
    held_out_nearest = np.full(len(inputs), np.nan)
    for k in range(cv):
        w_tool, w_none, arrays, nearest = fit(k, fold != k)
        fold_weights.append((w_tool, w_none))
        mine = fold == k
        held_out_nearest[mine] = nearest[mine]
        u = utilities(*arrays, w_tool, w_none)
        held_out_u[mine, : u.shape[1] - 1] = u[mine, :-1]
        held_out_u[mine, -1] = u[mine, -1]
        del arrays, u  # not alive while the next fold's are built: memory is one fold's features at a time
    w_tool, w_none, _, _ = fit(None, np.ones(len(inputs), dtype=bool))
    found = held_out_nearest[np.isfinite(held_out_nearest)]
    far_cutoff = float(np.quantile(found, FAR_QUANTILE)) if len(found) else None

    column_of = np.where(y == NONE_INDEX, width, y)
    best_cosine = np.array([s.cos.max() if len(s.cos) else 0.0 for s in scores])
    far_tool_cosine = typical_tool_cosine(best_cosine, usable & (y != NONE_INDEX))
    far = (held_out_u, held_out_nearest, best_cosine, column_of, usable, far_cutoff, far_tool_cosine)
    none_base, far_slope = (None, fit_far_slope(*far)) if with_none else fit_base_and_slope(*far)
    if none_base is not None:  # no 'none' learned: the base the rise lifts
        held_out_u[:, -1] = none_base
    held_out_u[:, -1] += far_boost(held_out_nearest, best_cosine, far_cutoff, far_tool_cosine, far_slope)

    def calibration(rows: np.ndarray, held_out: np.ndarray = held_out_u) -> dict:
        """Temperature, then top-label slope and shift, fitted on the held-out predictions of ``rows``."""
        rows = rows & usable
        t = fit_temperature(held_out[rows], y[rows])
        p = softmax(held_out[rows] / t)
        slope, shift = fit_top_label(p.max(axis=1), p.argmax(axis=1) == column_of[rows])
        return {"temperature": t, "temperature_fitted_on": int(rows.sum()), "confidence_slope": slope,
                "confidence_shift": shift}

    def kept_probe(without: frozenset[int]) -> dict | None:
        probe = probes.probe(without)
        return None if probe is None else probe.encoded()

    fold_models = []
    for k, (wt, wn) in enumerate(fold_weights):
        fold_models.append(LogitWeights(tool=wt.tolist(), none=None if wn is None else wn.tolist(),
                                        probe=kept_probe(frozenset({k})), **calibration(fold != k)))
    full_calibration = calibration(np.ones(len(inputs), dtype=bool))
    # cross-fitted figures: each request under its own fold's model and calibration
    def held_out_probabilities(held_out: np.ndarray, calibrations: list) -> np.ndarray:
        """Each request's probabilities under its own fold's calibration (a LogitWeights or ExpertWeights)."""
        out = np.zeros_like(held_out)
        for k, calibrated in enumerate(calibrations):
            mine = fold == k
            out[mine] = top_label(softmax(held_out[mine] / calibrated.temperature), calibrated.confidence_slope,
                                  calibrated.confidence_shift)
        return out

    p = held_out_probabilities(held_out_u, fold_models)

    def figures(p: np.ndarray) -> dict[str, float]:
        pu, column = p[usable], column_of[usable]
        right = pu.argmax(axis=1) == column
        return {"n": float(usable.sum()), "accuracy": float(right.mean()),
                "nll": float(-np.mean(np.log(np.maximum(pu[np.arange(len(pu)), column], 1e-12)))),
                "ece": expected_calibration_error(pu.max(axis=1).tolist(), right.tolist())}

    cross, cross_logit = figures(p), None
    full_expert = None
    encoders_dir = out.resolve().with_suffix(".encoders")
    if fine_tune:  # experimental: a checkout's experimental/fine_tuning, not part of the installed package
        from experimental.fine_tuning import product_experts
        from experimental.fine_tuning.fine_tune import SCALE

        targets = np.where(y == NONE_INDEX, [len(item.tools) for item in inputs], y)
        settings = {"epochs": fine_tune_epochs, "lr": fine_tune_lr, "seed": fine_tune_seed}

        def tuned(name: str, rows: np.ndarray, seed: int) -> product_experts.TunedEncoder:
            chosen = np.flatnonzero(rows & usable)
            if progress is not None:
                progress(f"fine-tuning encoder {seed + 1} of {cv + 1} ({name}, {len(chosen):,} requests, "
                         f"{fine_tune_epochs} epoch(s)) ...")
            return product_experts.fine_tune_encoder(
                encoder, [inputs[i] for i in chosen], targets[chosen], encoders_dir, name, learn_none=with_none,
                epochs=fine_tune_epochs, lr=fine_tune_lr, seed=SEEDS_PER_DRAW * fine_tune_seed + seed)

        # the product of each request held out: fold k's calibrated p and fold k's encoder, neither saw fold k
        held_out_s = np.full_like(held_out_u, -np.inf)
        fold_encoders = []
        for k in range(cv):
            fold_encoders.append(tuned(f"fold-{k}", fold != k, k))
            mine = np.flatnonzero(fold == k)
            cosines = product_experts.expert_cosines([inputs[i] for i in mine], str(fold_encoders[k].folder))
            held_out_s[mine] = product_experts.product_utilities(p[mine], cosines, fold_encoders[k].tau, SCALE)
        full_encoder = tuned("full", np.ones(len(inputs), dtype=bool), cv)

        def expert(tuned_encoder: product_experts.TunedEncoder, rows: np.ndarray) -> ExpertWeights:
            fitted = calibration(rows, held_out_s)
            return ExpertWeights(encoder=str(tuned_encoder.folder.relative_to(out.resolve().parent)),
                                 encoder_files=tuned_encoder.fingerprint, tau=tuned_encoder.tau, scale=SCALE,
                                 weight=product_experts.WEIGHT, temperature=fitted["temperature"],
                                 confidence_slope=fitted["confidence_slope"],
                                 confidence_shift=fitted["confidence_shift"], trained_on=tuned_encoder.trained_on,
                                 **settings)

        fold_models = [weights.model_copy(update={"expert": expert(fold_encoders[k], fold != k)})
                       for k, weights in enumerate(fold_models)]
        full_expert = expert(full_encoder, np.ones(len(inputs), dtype=bool))
        product = held_out_probabilities(held_out_s, [weights.expert for weights in fold_models])
        cross, cross_logit = figures(product), cross
    if folds == 1:  # one model on every example: it refuses to score any of them
        fold_models = []
    model = DecisionModelFile(
        method=METHOD + (PRODUCT_METHOD if fine_tune else ""), embedding_model=encoder, tool_features=list(TOOL_FEATURES),
        none_features=list(NONE_FEATURES), taskset=taskset_dir.resolve().name, version=version_name,
        taskset_hash=version.manifest.content_hash, trained_at=datetime.now(timezone.utc), l2=l2, folds=folds,
        fold_salt=salt, fold_models=fold_models,
        full_model=LogitWeights(tool=w_tool.tolist(), none=None if w_none is None else w_none.tolist(),
                                probe=kept_probe(frozenset()), expert=full_expert, **full_calibration),
        probe_c=PROBE_C,
        example_ids=[item.request_id for item in inputs], example_text_hashes=hashes,
        example_labels=[str(label) for label in label_names], example_folds=fold.tolist(),
        example_texts=texts,
        cross_fitted=cross, cross_fitted_logit=cross_logit, unseen_weight=unseen_weight,
        unseen_zeroed=[*EXAMPLE_TOOL_FEATURES, *EXAMPLE_NONE_FEATURES] if unseen_weight > 0 else [],
        far_cutoff=far_cutoff, far_slope=far_slope, far_tool_cosine=far_tool_cosine, far_none_base=none_base,
        far_quantile=FAR_QUANTILE if far_cutoff is not None else None,
        encoder_files=None if encoder == DEFAULT_MODEL_ID else files_fingerprint(encoder),
        context_turns=context_turns,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, model.model_dump_json().encode())
    if encoders_dir.is_dir():  # an earlier training's encoders (or none now): the file names the ones to keep
        from experimental.fine_tuning.product_experts import remove_unlisted

        remove_unlisted(encoders_dir, [out.parent / w.expert.encoder
                                       for w in [*model.fold_models, model.full_model] if w.expert])
    return TrainedModel(model, out)
