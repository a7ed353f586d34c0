"""A selection arm: a catalogue (or each request's own tools) and a selector with its pinned model, its
options checked before anything runs (hosted: pinned ids, keys from the environment, prices; offline: known
options) and its offline router's cut-off and decision model settled."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.catalogue import NONE_LABEL, Catalogue
from schemas.selection.experiment import PER_REQUEST_CATALOGUE
from tasks.core_records import ArmContext, ArmRefused, ResolvedArm
from tasks.files.content_hash import sha256_hex
from tasks.selectors.arm_options import answer_options
from tasks.selectors.providers.chat_options import HOSTED_KINDS, check_hosted_arm, check_offline_arm
from tasks.selectors.routers.position_biased import KIND as POSITION_BIASED
from tasks.selectors.routers.position_biased import parse_options as position_biased_options
from tasks.selectors.routers.router_setup import DEFAULT_MODELS, OFFLINE_ROUTER_KINDS, router_setup
from tasks.taskset.catalogue_memo import load_checked_catalogue
from tasks.taskset.load_taskset import version_paths


@dataclass(frozen=True, kw_only=True)
class SelectionArm(ResolvedArm):
    """A selection arm with its catalogue read."""

    instrument = "selection"
    catalogue_name: str
    catalogue: Catalogue | None
    """None when each request offers its own tools ('per_request')."""
    selector: str
    run_options: dict[str, Any] | None = None
    """The options the selector runs with: ``options`` with its offline router's cut-off and decision-model
    file settled (``tasks/selectors/routers/router_setup.py``); None = ``options`` as written."""
    abstain_rule: str | None = None
    """How the offline router's 'none' cut-off was set (recorded with the run); None without one."""
    decision_model_hash: str | None = None
    """sha256 of the trained decision model's file, if the arm or its router uses one."""
    far_cutoff: float | None = None
    """That model's far cut-off (nearest-example cosine), if its file records one."""

    @property
    def selector_options(self) -> dict[str, Any]:
        """What the selector is built with and fingerprinted on."""
        return self.options if self.run_options is None else self.run_options

    @property
    def provider(self) -> str | None:
        return self.selector if self.selector in HOSTED_KINDS else None

    @property
    def catalogue_hash(self) -> str:
        if self.catalogue is None:
            return sha256_hex(PER_REQUEST_CATALOGUE)
        return sha256_hex(self.catalogue.content_json())

    def own_respect(self, respect: str) -> Any:
        if respect == "catalogue":
            return self.catalogue_hash
        if respect == "selector":  # options that only change how calls are made are not a selector change
            return json.dumps([self.selector, answer_options(self.options)], sort_keys=True, default=str)
        raise KeyError(respect)


def version_has_none_labels(taskset_dir: Path, version: str) -> bool:
    """Whether the version's manifest counts any 'none' label (False when it cannot be read: loading the
    version later says what is wrong with it)."""
    try:
        manifest = json.loads(version_paths(taskset_dir, version)["manifest"].read_bytes())
        return int((manifest.get("counts_by_label") or {}).get(NONE_LABEL, 0)) > 0
    except (OSError, ValueError, AttributeError, TypeError):
        return False


def settle_router(selector: str, model_id: str, options: dict[str, Any], has_none_labels: bool, base_dir: Path
                  ) -> tuple[dict[str, Any] | None, str | None, str | None, float | None]:
    """(run options, abstain rule, decision model hash, its far cut-off) of an arm: its own offline router, or
    the offline router of a routed hosted arm; ValueError for an unusable cut-off or model file."""
    if selector in OFFLINE_ROUTER_KINDS:
        setup = router_setup(selector, model_id, options, has_none_labels=has_none_labels, base_dir=base_dir)
        return setup.options, setup.abstain_rule, setup.model_hash, setup.far_cutoff
    if selector == POSITION_BIASED:  # the simulation's base router is settled as that router would be
        _, base, base_options = position_biased_options(options)
        setup = router_setup(base, DEFAULT_MODELS[base], base_options, has_none_labels=has_none_labels,
                             base_dir=base_dir)
        return {**options, "base_options": setup.options}, setup.abstain_rule, setup.model_hash, setup.far_cutoff
    router = options.get("router")
    if router in OFFLINE_ROUTER_KINDS:
        setup = router_setup(router, options.get("router_model"), dict(options.get("router_options") or {}),
                             has_none_labels=has_none_labels, base_dir=base_dir)
        return {**options, "router_options": setup.options}, setup.abstain_rule, setup.model_hash, setup.far_cutoff
    return None, None, None, None


def resolve_selection_arm(name: str, rung: int, merged: dict[str, Any], context: ArmContext) -> SelectionArm:
    """Hosted-model arms: pinned ids, keys in the environment, prices, routing and judge options (see
    tasks/selectors/providers/chat_options.py), answer-changing defaults filled in; offline arms: known options. Then
    the catalogue and prompt are read and the offline router settled. Nothing is called."""
    options = dict(merged.get("options") or {})
    if merged.get("batch") is not None and merged["selector"] in HOSTED_KINDS:
        options["batch"] = merged["batch"]  # a transport option: out of cache keys and the one-change rule
    if merged["selector"] in HOSTED_KINDS:
        options, problems = check_hosted_arm(merged["selector"], merged["model"], options)
    else:
        problems = check_offline_arm(options)
    if merged["selector"] == POSITION_BIASED and not problems:
        try:
            position_biased_options(options)
        except ValueError as error:
            problems = [("option-known", str(error))]
    if problems:
        raise ArmRefused(problems)
    catalogue_name = merged["catalogue"]
    catalogue = None if catalogue_name == PER_REQUEST_CATALOGUE else context.once(
        "catalogue", catalogue_name, lambda: load_checked_catalogue(context.taskset_dir, catalogue_name))
    prompt_text = context.prompt(merged["prompt"])
    try:
        run_options, abstain_rule, model_hash, far_cutoff = settle_router(
            merged["selector"], merged["model"], options,
            version_has_none_labels(context.taskset_dir, merged["version"]), context.experiment_dir)
    except ValueError as error:  # a router option's own rule (RouterOptionError), else its files'
        raise ArmRefused([(getattr(error, "rule", "router-files"), str(error))]) from None
    return SelectionArm(
        name=name, rung=rung, catalogue_name=catalogue_name, catalogue=catalogue, prompt_name=merged["prompt"],
        prompt_text=prompt_text, model_id=merged["model"], selector=merged["selector"], version=merged["version"],
        options=options, run_options=run_options, abstain_rule=abstain_rule, decision_model_hash=model_hash,
        far_cutoff=far_cutoff)
