"""What an offline router runs with in one arm: its 'none' cut-off and its decision-model file.

The cut-off (the score below which the router picks 'none') comes, in this order, from:

1. ``abstain_threshold`` written in the options (a number; ``never`` turns abstaining off), or for a trained
   model that learned 'none' ``abstain_margin`` (a number added to its learned 'none' utility);
2. ``abstain_cutoff: <file>``: a cut-off fitted by ``tooleval fit`` (``schemas/cutoff.py``), path relative to
   the experiment file; the file must have been fitted for the same router (kind, model, options); it sets
   ``abstain_margin`` when fitted on the margin scale, else ``abstain_threshold``; a file that holds a fitted
   ``temperature`` sets the router's ``temperature`` option too (replacing one written in the options);
3. nothing written, and the arm's task-set version has no 'none' labels: the router **never abstains**
   (a fixed default cut-off would only turn right answers into 'none' there);
4. nothing written, and the version has 'none' labels: the router's default cut-off.

A trained decision model (``selector: trained`` / ``router: trained``) names its file with ``model_file:``
(relative to the experiment file); it is read here to check it exists, and its sha256 goes with the run.

The same rules apply to the offline router of a routed hosted arm (``router_options``).

``context_turns`` (the turns read before the last user turn, ``routers/conversation.py``) must be a whole
number >= 0 (rule ``context-turns``); a trained model reads the turns it learned from (its file's
``context_turns``), and an option asking for other turns is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from pydantic import ValidationError

from schemas.cutoff import AbstainCutoff, fitted_on
from schemas.decision_model import DecisionModelFile
from tasks.files.content_hash import file_sha256
from tasks.selectors.arm_options import answer_options
from tasks.selectors.routers.conversation import CONTEXT_OPTION, parse_context_turns

OFFLINE_ROUTER_KINDS = ("lexical", "embedding", "trained")
NEVER = "never"
"""``abstain_threshold: never``: the router never picks 'none' (a request offered no tool still gets 'none')."""

CUTOFF_OPTIONS = frozenset({"abstain_threshold", "abstain_cutoff", "abstain_margin"})
"""Options that set the cut-off; a fitted file is matched to its router on every other answer option."""

DEFAULT_MODELS = {"lexical": "bm25-okapi", "embedding": "sentence-transformers/all-MiniLM-L6-v2",
                  "trained": "tooleval-hybrid"}

_CONTEXT_DEFAULT = "2026-12-07 context_turns 2 by default"
_CONTEXT_BELOW = "2026-12-07 earlier turns read when the last turn's best cosine is below 0.25"
SCORING_REVISIONS = {"trained": "2026-12-04 product cut-offs", "lexical": _CONTEXT_DEFAULT,
                     "embedding": _CONTEXT_BELOW, "position_biased": _CONTEXT_BELOW}
"""A revision of an offline router's scoring code, in the selection cache key of every arm it answers or routes
(``tasks/selection/plan_batch.py``). The key already holds the model file's sha256 and the options; change the
revision when a change of the code changes what the router answers for the same file and options, so no
answer the old code cached is served for the new."""


@dataclass(frozen=True)
class RouterSetup:
    """The options a router runs with, and what the run records about them."""

    options: dict[str, Any]
    abstain_rule: str
    """How the cut-off was set, e.g. 'fitted cutoffs/x.json (sha256 1a2b3c4d5e6f): 0.31'."""
    model_hash: str | None = None
    """sha256 of the trained decision model's file, if the router is one."""
    far_cutoff: float | None = None
    """The trained model's far cut-off (its file's ``far_cutoff``): a nearest-example cosine below it is out of
    its domain."""


FITTED_OPTIONS = frozenset({"temperature"})
"""Options a fitted file may set besides the cut-off: left out of the options it is matched on."""


class RouterOptionError(ValueError):
    """An option the router cannot run with; ``rule`` names the rule it breaks."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule


def check_context_turns(kind: str, run: dict[str, Any], model: DecisionModelFile | None) -> None:
    """RouterOptionError unless ``context_turns`` is a whole number >= 0 and, for a trained model, the turns its
    file says it learned from; the trained model's is then dropped from ``run`` (its file holds it)."""
    if CONTEXT_OPTION not in run:
        return
    try:
        turns = parse_context_turns(run[CONTEXT_OPTION])
    except ValueError as error:
        raise RouterOptionError("context-turns", f"{kind} router: {error}") from None
    if model is not None:
        if turns != model.context_turns:
            raise RouterOptionError("context-turns", f"the decision model {run['model_file']} learned from the last "
                                    f"user turn after {model.context_turns} earlier turn(s) and scores the same; "
                                    f"for {turns}, train one with `tooleval train --context-turns {turns}`")
        del run[CONTEXT_OPTION]


def router_identity_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The options a fitted cut-off is matched on: answer options except the cut-off's own and the
    temperature (which the fit sets; the scores the cut-off is fitted on do not depend on it)."""
    return {k: v for k, v in answer_options(options).items()
            if k not in CUTOFF_OPTIONS | FITTED_OPTIONS and k != "model_file"}


def parse_threshold(value: Any) -> float:
    """An ``abstain_threshold`` option as a float; ``never`` (or null) is minus infinity."""
    if value is None or value == NEVER:
        return float("-inf")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"abstain_threshold must be a number or '{NEVER}', got {value!r}")
    return float(value)


def parse_margin(value: Any) -> float:
    """An ``abstain_margin`` option as a float: a finite number (no ``never``: a margin moves the learned
    'none', ``abstain_threshold: never`` removes it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"abstain_margin must be a number, got {value!r}")
    return float(value)


def load_cutoff(path: Path) -> AbstainCutoff:
    """A fitted cut-off file, or ValueError saying what is wrong with it."""
    if not path.is_file():
        raise ValueError(f"cut-off file {path} not found (write one with `tooleval fit`)")
    try:
        return AbstainCutoff.model_validate_json(path.read_bytes())
    except ValidationError as error:
        raise ValueError(f"{path} is not a cut-off file written by `tooleval fit`: {error.errors()[0]['msg']}") from None


def _encoder_problem(folder: Path, fingerprint: str | None) -> str | None:
    """'missing' (no sentence-transformers model there), 'changed' (its files' fingerprint is not
    ``fingerprint``; None: not checked) or None: the one check of a local encoder a model file names."""
    from tasks.selectors.routers.embedding_store import files_fingerprint, is_model_folder  # a local encoder's arm only

    if not is_model_folder(folder):
        return "missing"
    if fingerprint is not None and files_fingerprint(str(folder)) != fingerprint:
        return "changed"
    return None


def check_encoder(model_path: Path, model: DecisionModelFile) -> None:
    """ValueError unless the local encoder the model was trained on is here, with the files it had then."""
    encoder = Path(model.embedding_model)
    problem = _encoder_problem(encoder, model.encoder_files)
    if problem == "missing":
        raise ValueError(f"decision model {model_path} was trained on the encoder {encoder}, which is not on "
                         "this machine: copy it there, or train the model again here")
    if problem == "changed":
        raise ValueError(f"decision model {model_path} was trained on other weights than the encoder {encoder} "
                         "holds now (its files changed since): train the model again on it")


def check_experts(model_path: Path, model: DecisionModelFile) -> None:
    """ValueError unless every fine-tuned encoder the model names (``tooleval train --fine-tune``) is beside its
    file with the files it had when the model was trained."""
    for weights in [*model.fold_models, model.full_model]:
        if weights.expert is None:
            continue
        folder = model_path.parent / weights.expert.encoder
        problem = _encoder_problem(folder, weights.expert.encoder_files)
        if problem == "missing":
            raise ValueError(f"decision model {model_path} scores with the fine-tuned encoder {folder}, which is "
                             "not there: copy the model's .encoders folder beside it, or train it again")
        if problem == "changed":
            raise ValueError(f"the fine-tuned encoder {folder} of decision model {model_path} holds other weights "
                             "than it was trained with: train the model again")


def router_setup(kind: str, model_id: str | None, options: Mapping[str, Any], *, has_none_labels: bool,
                 base_dir: Path) -> RouterSetup:
    """The options ``kind`` runs with in an arm whose version has (or has not) 'none' labels; ValueError for
    a cut-off or model file that cannot be used. Paths are relative to ``base_dir`` (the experiment's folder)."""
    run = dict(options)
    model_hash, far, model = None, None, None
    if kind == "trained":
        if not isinstance(run.get("model_file"), str):
            raise ValueError("a trained decision model needs `model_file: <path>` (written by `tooleval train`)")
        model_path = (base_dir / run["model_file"]).resolve()
        if not model_path.is_file():
            raise ValueError(f"decision model file {model_path} not found: write it with `tooleval train "
                             f"TASKSET_VERSION_PATH --out {model_path}`")
        try:
            model = DecisionModelFile.model_validate_json(model_path.read_bytes())
        except (ValidationError, OSError) as error:
            detail = error.errors()[0]["msg"] if isinstance(error, ValidationError) else str(error)
            raise ValueError(f"{model_path} is not a decision model written by `tooleval train`: {detail}") from None
        far = model.far_cutoff
        if model.embedding_model != DEFAULT_MODELS["embedding"]:
            check_encoder(model_path, model)
        check_experts(model_path, model)
        run["model_file"] = str(model_path)
        model_hash = run["model_sha256"] = file_sha256(model_path)
    check_context_turns(kind, run, model)
    given_cutoffs = sorted(CUTOFF_OPTIONS & set(run))
    if len(given_cutoffs) > 1:
        raise ValueError(f"give one of {', '.join(given_cutoffs)}, not both")
    if "abstain_margin" in run:
        if kind != "trained":
            raise ValueError(f"abstain_margin shifts a trained decision model's learned 'none'; the {kind} router "
                             "takes abstain_threshold")
        parse_margin(run["abstain_margin"])
        if model.full_model.none is None:
            raise ValueError(f"abstain_margin shifts the learned 'none', and decision model {run['model_file']} "
                             "learned none (its examples had no 'none' label): use abstain_threshold")
        return RouterSetup(run, f"option: margin {run['abstain_margin']}", model_hash, far)
    if "abstain_threshold" in run:
        value = parse_threshold(run["abstain_threshold"])
        return RouterSetup(run, NEVER if value == float("-inf") else f"option: {value:g}", model_hash, far)
    if "abstain_cutoff" in run:
        given = str(run.pop("abstain_cutoff"))
        path = (base_dir / given).resolve()
        cutoff = load_cutoff(path)
        router_model = model_id or DEFAULT_MODELS.get(kind, "")
        mine = router_identity_options(run)
        fitted_for = {k: v for k, v in cutoff.router_options.items() if k not in FITTED_OPTIONS}
        if (cutoff.selector, cutoff.model, fitted_for) != (kind, router_model, mine):
            raise ValueError(
                f"cut-off {given} was fitted for {cutoff.selector} {cutoff.model} with options "
                f"{cutoff.router_options}, not for {kind} {router_model} with {mine}: fit one for this router")
        if cutoff.threshold is None:
            run["abstain_threshold"] = NEVER
        elif cutoff.scale == "margin":
            run["abstain_margin"] = cutoff.threshold
        else:
            run["abstain_threshold"] = cutoff.threshold
        shown = f"margin {cutoff.threshold}" if "abstain_margin" in run else run["abstain_threshold"]
        if cutoff.temperature is not None:
            run["temperature"] = cutoff.temperature
            shown = f"{shown}, temperature {cutoff.temperature:.4g}"
        return RouterSetup(run, f"fitted {given} (sha256 {file_sha256(path)[:12]}; {fitted_on(cutoff)}): {shown}",
                           model_hash, far)
    if not has_none_labels:
        run["abstain_threshold"] = NEVER
        return RouterSetup(run, f"{NEVER} (no fitted cut-off and no 'none' label in the version)", model_hash, far)
    return RouterSetup(run, "default", model_hash, far)
