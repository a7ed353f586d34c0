"""The trained decision model as a selector (``selector: trained``) and as a routed arm's decision model
(``router: trained``): a model file written by ``tooleval train`` (``train_decision_model.py``).

It returns a probability for every offered tool and 'none' (the softmax of the temperature-scaled utilities,
its top one then calibrated by the model's slope and shift) and a confidence (the top probability). Which model scores a request:

- a request the model learned from (its normalised text is among the examples') is scored by the fold model
  that did not learn from it, its kNN features looking up no example of that fold (cross-fitting). The text
  decides, never the id alone: ids are unique only inside one task set (MetaTool's are CSV row numbers, so
  two imports share them), a request of the version the model learned from has the text it learned from
  (folds are assigned by text hash), and the answer is then a function of what the cache key holds (the
  messages, not the id);
- a model trained with one fold has no such model: it **refuses** those requests (an error row, and
  ``leaked_requests`` lets a run refuse them before any selection);
- any other request is scored by the full model.

'none': learned when the model's examples had 'none' labels; ``abstain_threshold`` (a number on the
calibrated utility scale) replaces the learned 'none' utility with a constant, and ``never`` removes the
option. The learned 'none' includes its rise far from the examples and the tools (``far_abstention.py``):
a margin keeps the rise, a constant replaces it with the rest. A model whose examples had no 'none' label
learned none; when training fitted a rise, its 'none' is the file's constant ``far_none_base`` plus that
rise (unlikely near the examples or a fitting tool), which a constant replaces and ``never`` removes; it
takes no margin. ``abstain_margin`` (a number, what ``tooleval fit`` writes for a model that learned
'none') keeps the learned 'none' utility and adds the margin to it:
the model picks 'none' when its best tool beats the learned 'none' by less than the margin (0 is the model
as trained). A constant throws the learned 'none' away: on the
pooled BFCL live set the best margin beats the best constant on both slices (docs/measured/decision-models.md,
"The fitted margin").

A model trained with ``--fine-tune`` carries a fine-tuned encoder per fold model and one for the full model
(experimental: ``experimental/fine_tuning/product_experts.py``, in a checkout only): the model that scores a
request (chosen as above) multiplies its p with the softmax of its own encoder's cosines, and the product,
calibrated on held-out products, is what the selection records.
Its 'none' is the two experts' together (the logit's learned 'none' and the encoder's threshold tau), and a
cut-off applies to that: a margin shifts the product's 'none' utility, a constant replaces it, ``never`` removes
it; the logit inside the product always keeps its learned 'none'.

Each scored selection records ``nearest_example_cos``: the cosine of the request to its most similar example
the scoring model looked up (any label; a fold model's excludes its fold). Below the model file's
``far_cutoff`` the request is out of the model's domain (the report counts such rows per arm).
"""

from __future__ import annotations

import time
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from schemas.catalogue import NONE_LABEL
from schemas.decision_model import DecisionModelFile
from schemas.selection.rows import Selection
from schemas.taskset import Message
from tasks.selectors.base import SelectionInput
from tasks.selectors.decision_models.example_text import example_text, text_hash
from tasks.selectors.routers.router_setup import DEFAULT_MODELS, parse_margin, parse_threshold

if TYPE_CHECKING:  # the numerical stack is imported by the selector's methods: checking a run reads no numpy
    import numpy as np

    from tasks.selectors.decision_models.decision_features import Examples, ProbeScores
    from tasks.selectors.decision_models.embedding_probe import Probe

DEFAULT_MODEL_ID = DEFAULT_MODELS["trained"]
LEAKED = "the decision model learned from this request (trained with one fold: no model that did not see it)"


@lru_cache(maxsize=8)
def load_model_file(path: str, sha256: str | None = None) -> DecisionModelFile:
    """A decision model file, parsed once per process (and per content hash)."""
    return DecisionModelFile.model_validate_json(Path(path).read_bytes())


def leaked_requests(model: DecisionModelFile, taskset: str, taskset_hash: str, ids: Sequence[str],
                    texts: Sequence[str], messages: Sequence[Sequence[Message]] | None = None) -> list[str]:
    """Ids of the requests (of the task set ``taskset`` at content hash ``taskset_hash``) the model would have
    to score although it learned from them: the same request of the same task set (name and hash, then id),
    or the same normalised text. An id alone never matches: another task set's ids are another set's
    requests. One-fold models only: a cross-fitted model scores them with the fold model that never saw them."""
    if model.fold_models:
        return []
    same_set = (model.taskset, model.taskset_hash) == (taskset, taskset_hash)
    known_ids = set(model.example_ids) if same_set else set()
    known_texts = set(model.example_text_hashes)
    if model.context_turns and messages is not None:  # the model's examples are the conversations as it read them
        texts = [example_text(conversation, model.context_turns) for conversation in messages]
    return [i for i, t in zip(ids, texts) if i in known_ids or text_hash(t) in known_texts]


class TrainedSelector:
    """Conditional logit over (request, tool) features; a probability per offered tool and 'none'."""

    kind = "trained"

    def __init__(self, model_id: str = DEFAULT_MODEL_ID, options: Mapping[str, Any] | None = None) -> None:
        options = dict(options or {})
        self.model_id = model_id
        path = options.pop("model_file", None)
        sha256 = options.pop("model_sha256", None)
        threshold = options.pop("abstain_threshold", None) if "abstain_threshold" in options else "default"
        margin = options.pop("abstain_margin", None)
        if options:
            raise ValueError(f"unknown TrainedSelector options: {sorted(options)}")
        if not isinstance(path, str):
            raise ValueError("a trained decision model needs options.model_file")
        self.model = load_model_file(path, sha256)
        self.folder = Path(path).resolve().parent
        self.cutoff = None if threshold == "default" else parse_threshold(threshold)
        m = self.model
        self.margin = None
        if margin is not None:
            if threshold != "default":
                raise ValueError("give abstain_threshold or abstain_margin, not both")
            if m.full_model.none is None:
                raise ValueError("abstain_margin shifts the learned 'none', and this decision model learned none "
                                 "(its examples had no 'none' label; at most it abstains far from them): use "
                                 "abstain_threshold")
            self.margin = parse_margin(margin)
        self._examples: Examples | None = None
        self._probes: dict[int | None, Probe | None] = {}
        self.fold_by_text = dict(zip(m.example_text_hashes, m.example_folds))
        from tasks.selectors.decision_models.decision_features import model_columns

        self.columns = model_columns(m.tool_features, m.none_features)
        """The file's features among the computed ones (a file written before a feature was added has fewer)."""

    @property
    def examples(self) -> Examples:
        """The labelled examples with their embeddings (encoded on first use, once per process)."""
        if self._examples is None:
            import numpy as np

            from tasks.selectors.decision_models.base_scores import embed_texts
            from tasks.selectors.decision_models.decision_features import Examples

            m = self.model
            self._examples = Examples(embed_texts(m.example_texts, m.embedding_model),
                                      np.asarray(m.example_labels, dtype=object),
                                      np.asarray(m.example_text_hashes, dtype=object), np.asarray(m.example_folds))
        return self._examples

    def probe_scores(self, which: int | None, query: np.ndarray) -> ProbeScores | None:
        """The probe features' input from the probe of the full model (None) or of fold model ``which`` (decoded
        once); None when the model has none (a file written before probes: the features are 0)."""
        from tasks.selectors.decision_models.decision_features import ProbeScores
        from tasks.selectors.decision_models.embedding_probe import Probe

        if which not in self._probes:
            weights = self.model.full_model if which is None else self.model.fold_models[which]
            self._probes[which] = None if weights.probe is None else Probe.decoded(**weights.probe.model_dump())
        probe = self._probes[which]
        return None if probe is None else ProbeScores(probe.classes, probe.log_proba(query))

    def _which(self, item: SelectionInput, hashed: str) -> int | None | str:
        """The fold model for this request, None for the full model, or LEAKED. By text only (see the module
        docstring): an id shared with an example of another task set is not that example."""
        fold = self.fold_by_text.get(hashed)
        if fold is None:
            return None
        return fold if self.model.fold_models else LEAKED

    def scores(self, batch: Sequence[SelectionInput]) -> list[np.ndarray | None]:
        """Calibrated tool utilities (offered order) of each input, for ``tooleval fit``; None when refused or
        empty."""
        return [None if p is None else p[1] for p in self._score(batch)]

    def none_margins(self, batch: Sequence[SelectionInput]) -> list[np.ndarray | None]:
        """Per input, each offered tool's calibrated utility minus the learned 'none' utility (``abstain_margin``'s
        scale: with margin m the model picks 'none' when the best of them is below m), for ``tooleval fit``; None
        when refused or empty."""
        return [None if p is None else p[1] - p[3] for p in self._score(batch)]

    def _score(self, batch: Sequence[SelectionInput]
               ) -> list[tuple[np.ndarray, np.ndarray, float | None, float] | None]:
        """(probabilities over tools + 'none', calibrated tool utilities, nearest example's cosine or None, the
        calibrated 'none' utility as learned, before any cut-off) per input; None when refused/empty."""
        import numpy as np

        from tasks.selectors.decision_models.base_scores import router_scores
        from tasks.selectors.decision_models.conditional_logit import softmax, top_label, utilities
        from tasks.selectors.decision_models.decision_features import NONE_FEATURES, feature_arrays_with_nearest
        from tasks.selectors.decision_models.far_abstention import far_boost

        inputs = list(batch)
        read = self.model.context_turns  # the turns the model learned from: it scores the same text
        scores, query = router_scores(inputs, self.model.embedding_model, read)
        texts = [example_text(item.messages, read) for item in inputs]
        hashes = [text_hash(text) for text in texts]
        out: list[tuple[np.ndarray, np.ndarray, float | None] | None] = [None] * len(inputs)
        groups: dict[int | None, list[int]] = {}
        if self.columns is None:
            raise ValueError(f"the decision model names features this tooleval does not compute: "
                             f"{self.model.tool_features} / {self.model.none_features}")
        tool_cols, none_cols = self.columns
        for i, item in enumerate(inputs):
            which = self._which(item, hashes[i])
            if which != LEAKED and texts[i].strip():
                groups.setdefault(which, []).append(i)  # type: ignore[arg-type]
        for which, group in groups.items():
            weights = self.model.full_model if which is None else self.model.fold_models[which]
            tool_x, mask, none_x, nearest = feature_arrays_with_nearest(
                [scores[i] for i in group], query[group], [hashes[i] for i in group], self.examples, which,
                self.probe_scores(which, query[group]))
            w_none = None if weights.none is None else np.asarray(weights.none)
            u = utilities(tool_x[..., tool_cols], mask, none_x[:, none_cols], np.asarray(weights.tool), w_none)
            if w_none is None and self.model.far_none_base is not None:  # no 'none' learned: the far rise's base
                u[:, -1] = self.model.far_none_base
            u[:, -1] += far_boost(nearest, none_x[:, NONE_FEATURES.index("cos_max")], self.model.far_cutoff,
                                  self.model.far_tool_cosine, self.model.far_slope)
            u /= weights.temperature
            calibration = weights
            expert = weights.expert
            if expert is not None:  # the product of the logit as learned and the fold's fine-tuned encoder
                from experimental.fine_tuning.product_experts import expert_cosines, product_utilities

                cosines = expert_cosines([inputs[i] for i in group], str(self.folder / expert.encoder))
                p = top_label(softmax(u), weights.confidence_slope, weights.confidence_shift)
                u = product_utilities(p, cosines, expert.tau, expert.scale, expert.weight) / expert.temperature
                calibration = expert
            learned_none = u[:, -1].copy()  # the cut-off replaces or shifts the final model's 'none' only
            if self.cutoff is not None:
                u[:, -1] = self.cutoff
            elif self.margin is not None:
                u[:, -1] += self.margin
            p = top_label(softmax(u), calibration.confidence_slope, calibration.confidence_shift)
            for row, i in enumerate(group):
                t = len(inputs[i].tools)
                near = float(nearest[row]) if np.isfinite(nearest[row]) else None
                out[i] = (np.concatenate([p[row, :t], p[row, -1:]]), u[row, :t], near, float(learned_none[row]))
        return out

    def select(self, batch: Sequence[SelectionInput]) -> list[Selection]:
        """One Selection per input, in order; latency is the batch's wall time split evenly."""
        if not batch:
            return []
        import numpy as np

        started = time.perf_counter()
        scored = self._score(batch)
        latency = (time.perf_counter() - started) * 1000.0 / len(batch)
        selections = []
        for item, result in zip(batch, scored):
            labels = [tool.name for tool in item.tools] + [NONE_LABEL]
            if (result is None and not item.text.strip()) or (result is not None and not item.tools):
                probabilities = dict.fromkeys(labels, 0.0) | {NONE_LABEL: 1.0}
                selections.append(Selection(request_id=item.request_id, chosen=NONE_LABEL, confidence=1.0,
                                            probabilities=probabilities, latency_ms=latency, served_model_id=self.model_id,
                                            detail="empty request text" if result is None else "no tools offered"))
            elif result is None:
                selections.append(Selection(request_id=item.request_id, chosen=None, outcome_hint="error",
                                            latency_ms=latency, served_model_id=self.model_id, detail=LEAKED))
            else:
                p = result[0]
                pick = int(np.argmax(p))  # ties: the earliest offered tool, 'none' last
                selections.append(Selection(request_id=item.request_id, chosen=labels[pick], confidence=float(p[pick]),
                                            probabilities=dict(zip(labels, p.tolist())), latency_ms=latency,
                                            served_model_id=self.model_id, nearest_example_cos=result[2]))
        return selections
