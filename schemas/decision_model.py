"""A trained decision model's file (``tooleval train``): a conditional logit over (request, tool) features,
calibrated (a temperature, then the chosen option's probability), with the labelled examples it learned from
and the folds it was cross-fitted on."""

from datetime import datetime

import base64
import binascii

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ProbeWeights(BaseModel):
    """An embedding probe (tasks/selectors/decision_models/embedding_probe.py): a multinomial logistic regression from the
    request's embedding to the labels the model learned from."""

    model_config = ConfigDict(extra="forbid")

    classes: list[str] = Field(description="The labels (tool names and 'none'), in row order of the weights.")
    dims: int = Field(description="Embedding dimensions.")
    weights_f32: str = Field(description="classes x dims weights: little-endian float32, row-major, base64.")
    bias: list[float] = Field(description="Intercept per label.")

    @model_validator(mode="after")
    def _shapes(self) -> "ProbeWeights":
        """The weights decode to classes x dims float32 values, and there is a bias per class."""
        try:
            size = len(base64.b64decode(self.weights_f32, validate=True))
        except (binascii.Error, ValueError):
            raise ValueError("probe weights_f32 is not base64") from None
        if size != 4 * len(self.classes) * self.dims or len(self.bias) != len(self.classes) or self.dims < 1:
            raise ValueError(f"probe of {len(self.classes)} classes x {self.dims} dims needs "
                             f"{4 * len(self.classes) * self.dims} bytes of weights and {len(self.classes)} biases; "
                             f"the file has {size} and {len(self.bias)}")
        return self


class ExpertWeights(BaseModel):
    """A second expert beside the logit (``tooleval train --fine-tune``): a sentence encoder fine-tuned on the
    same requests as the weights, whose cosine softmax q is multiplied with the logit's probabilities p
    (experimental: ``experimental/fine_tuning/product_experts.py``), and the product's own calibration."""

    model_config = ConfigDict(extra="forbid")

    encoder: str = Field(description="The fine-tuned encoder's folder, relative to the model file's folder.")
    encoder_files: str = Field(description="Its files hashed when it was written: a run refuses other weights.")
    tau: float | None = Field(description="The learned cosine threshold standing for 'none' in q (null: the "
                              "requests had no 'none' label; q never picks 'none').")
    scale: float = Field(description="Cosine scale of q's softmax (the fine-tuning's own).")
    weight: float = Field(description="The product is weight x log p + (1 - weight) x log q.")
    temperature: float = Field(description="Divides the product before its softmax; fitted on held-out products.")
    confidence_slope: float = Field(description="Top-label calibration of the product (see LogitWeights).")
    confidence_shift: float = Field(description="See confidence_slope.")
    epochs: int = Field(description="Fine-tuning epochs.")
    lr: float = Field(description="Fine-tuning learning rate.")
    seed: int = Field(0, description="The training's fine-tuning draw (`--fine-tune-seed`): encoder k of the file "
                      "(the folds', then the full model's) was shuffled and initialised with seed 1000 x draw + k.")
    trained_on: int = Field(description="Requests the encoder was fine-tuned on.")


class LogitWeights(BaseModel):
    """One fitted model: weights of the tool features and of the 'none' option's features, and its temperature."""

    model_config = ConfigDict(extra="forbid")

    tool: list[float] = Field(description="Weight per tool feature (DecisionModelFile.tool_features).")
    none: list[float] | None = Field(
        description="Weight per 'none' feature (DecisionModelFile.none_features); null = the model never abstains "
        "(no 'none' label among the requests it learned from).")
    temperature: float = Field(description="Divides every utility before the softmax; fitted on held-out predictions.")
    temperature_fitted_on: int = Field(description="Held-out requests the temperature was fitted on.")
    confidence_slope: float = Field(
        default=1.0, description="Top-label calibration: the chosen option's probability p becomes "
        "sigmoid(slope * logit(p) + shift), the others scaled to fill the rest; fitted on held-out predictions "
        "after the temperature (1 and 0: none, as in files written before it).")
    confidence_shift: float = Field(default=0.0, description="See confidence_slope.")
    probe: ProbeWeights | None = Field(
        default=None, description="The embedding probe whose log-probabilities are this model's probe features: "
        "fitted on the same requests as the weights (null: probe features 0, as in files written before it).")
    expert: ExpertWeights | None = Field(
        default=None, description="A fine-tuned encoder fine-tuned on the same requests as the weights, whose "
        "cosine joins the logit in a product (null: the logit alone; `tooleval train --fine-tune` writes one).")


class DecisionModelFile(BaseModel):
    """Everything needed to score a request, and to know which requests the model may not score."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(default="tooleval-decision-model", description="File kind.")
    format: int = Field(default=1, description="File format version.")
    method: str = Field(description="How it decides, in words.")
    embedding_model: str = Field(description="Sentence-embedding model (the encoder) of the cosine, kNN and probe "
                                 "features: the packaged MiniLM's id, or a local model directory's absolute path.")
    tool_features: list[str] = Field(description="Names of the per (request, tool) features, in weight order.")
    none_features: list[str] = Field(description="Names of the 'none' option's features, in weight order.")
    taskset: str = Field(description="Task-set folder the model learned from.")
    version: str = Field(description="Task-set version.")
    taskset_hash: str = Field(description="Content hash of that version.")
    trained_at: datetime = Field(description="When it was trained (UTC).")
    l2: float = Field(description="L2 penalty on the weights.")
    folds: int = Field(description="Cross-fitting folds (1 = one model on every example, no cross-fitting).")
    fold_salt: str = Field(description="A request's fold: sha256(salt + ':' + normalised text) mod folds.")
    fold_models: list[LogitWeights] = Field(
        description="Model k learned from every fold but k: it scores the requests of fold k (cross-fitting).")
    full_model: LogitWeights = Field(description="Learned from every example: scores requests it never saw.")
    example_ids: list[str] = Field(
        description="Request ids learned from (the leakage check): ids of the task set `taskset` at `taskset_hash` "
        "only, since ids are unique only inside one task set; a request of another set matches by text alone.")
    example_text_hashes: list[str] = Field(description="sha256 of each example's normalised request text.")
    example_labels: list[str] = Field(description="Each example's label (a tool name or 'none').")
    example_folds: list[int] = Field(description="Each example's fold.")
    example_texts: list[str] = Field(
        description="Each example's request text as embedded (kNN features: encoded again, once per process).")
    cross_fitted: dict[str, float] = Field(
        description="Held-out (cross-fitted) figures on the training version: accuracy, nll, ece, n.")
    unseen_weight: float = Field(
        default=0.0, description="Weight of the transfer copies it was trained with: each request learned from "
        "again with the features it would have if its tools had no labelled examples, so it scores tools and "
        "domains without examples on cosine and BM25. 0 = no copies (files written before transfer training).")
    unseen_zeroed: list[str] = Field(
        default_factory=list, description="The features the transfer copies set to 0 (those that come from the "
        "offered tools' examples); empty without copies.")
    far_cutoff: float | None = Field(
        default=None, description="A request whose nearest labelled example (any label) has a cosine below this "
        "is far from what the model learned from (out of its domain): the `far_quantile` quantile of the "
        "held-out training requests' nearest-example cosines. Null in files written before it was recorded.")
    far_slope: float | None = Field(
        default=None, description="The 'none' utility (before the temperature) rises by far_slope x max(0, "
        "far_cutoff - the nearest example's cosine) x max(0, far_tool_cosine - the best offered tool's cosine): "
        "the model abstains on requests unlike both its examples and the tools. The steepest rise (at most "
        "2000) that cost at most one point of held-out answerable accuracy and 0.02 of held-out log-loss in "
        "training (tasks/selectors/decision_models/far_abstention.py); a model that learned no 'none' rises from "
        "far_none_base. 0: no rise fits (in files written before far_none_base, always without a learned 'none'). "
        "Null (no rise) in files written before it.")
    far_tool_cosine: float | None = Field(
        default=None, description="The median best-tool cosine of the answerable training requests: below it a "
        "far request's 'none' rises (see far_slope). Null in files written before it.")
    far_none_base: float | None = Field(
        default=None, description="A model that learned no 'none' (its examples had no 'none' label): its 'none' "
        "utility before the far rise and the temperature, so the rise can lift it; fitted with far_slope within "
        "the same budgets (tasks/selectors/decision_models/far_abstention.py). Null: "
        "'none' is learned, or there is no rise (far_slope 0), or the file was written before it; a model that "
        "learned no 'none' then never abstains.")
    probe_c: float | None = Field(
        default=None, description="Inverse L2 strength the embedding probes were fitted with (null: no probes).")
    far_quantile: float | None = Field(
        default=None, description="The quantile of the held-out nearest-example cosines `far_cutoff` is.")
    cross_fitted_logit: dict[str, float] | None = Field(
        default=None, description="With fine-tuned experts: the logit's own held-out figures (`cross_fitted` is "
        "then the product's). Null without experts.")
    encoder_files: str | None = Field(
        default=None, description="A local encoder's files hashed when the model was trained (names, sizes, "
        "small files whole, sampled blocks of the weights): a run refuses the model once the directory holds "
        "other weights. None for the packaged MiniLM (pinned by its package).")
    context_turns: int = Field(
        default=0, ge=0, description="Turns of the conversation read before its last user turn (the routers' "
        "`context_turns`): the model learned from that text and scores with it. 0 (the last user turn alone) "
        "in files written before it was recorded.")
