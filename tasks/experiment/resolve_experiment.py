"""Load an experiment file and resolve its arms; refuse comparisons that change more than one thing."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from schemas.catalogue import NONE_LABEL, Catalogue
from schemas.selection.experiment import (
    PER_REQUEST_CATALOGUE,
    RESPECTS,
    SelectionArmSpec,
    SelectionComparison,
    SelectionExperimentFile,
)
from tasks.files.content_hash import sha256_hex
from tasks.files.input_errors import InputError, Problem
from tasks.files.yaml_files import load_yaml
from tasks.selectors.chat_options import HOSTED_KINDS, answer_options, check_hosted_arm, check_offline_arm
from tasks.selectors.router_setup import OFFLINE_ROUTER_KINDS, router_setup
from tasks.taskset.load_taskset import load_catalogue, load_prompt, version_paths

SEED_LIMIT = 2 ** 63
MIN_SEEDS = 3
ARM_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


@dataclass(frozen=True)
class ResolvedArm:
    """An arm with every respect filled in and its catalogue and prompt read."""

    name: str
    rung: int
    catalogue_name: str
    catalogue: Catalogue | None
    """None when each request offers its own tools ('per_request')."""
    prompt_name: str
    prompt_text: str
    model_id: str
    selector: str
    version: str
    options: dict[str, Any] = field(default_factory=dict)
    run_options: dict[str, Any] | None = None
    """The options the selector runs with: ``options`` with its offline router's cut-off and decision-model
    file settled (``tasks/selectors/router_setup.py``); None = ``options`` as written."""
    abstain_rule: str | None = None
    """How the offline router's 'none' cut-off was set (recorded with the run); None without one."""
    decision_model_hash: str | None = None
    """sha256 of the trained decision model's file, if the arm or its router uses one."""

    @property
    def selector_options(self) -> dict[str, Any]:
        """What the selector is built with and fingerprinted on."""
        return self.options if self.run_options is None else self.run_options

    @property
    def catalogue_hash(self) -> str:
        if self.catalogue is None:
            return sha256_hex(PER_REQUEST_CATALOGUE)
        return sha256_hex(self.catalogue.model_dump_json())

    @property
    def prompt_hash(self) -> str:
        return sha256_hex(self.prompt_text)

    def respect(self, respect: str) -> Any:
        return {
            "catalogue": self.catalogue_hash,
            "prompt": self.prompt_hash,
            "model": self.model_id,
            "selector": json.dumps([self.selector, _answer_options(self.options)], sort_keys=True, default=str),
            "version": self.version,
        }[respect]


def _answer_options(options: dict[str, Any]) -> dict[str, Any]:
    """Options that can change an answer: concurrency, timeouts, retries, key names and prices do not,
    so arms differing only in them are not a selector change (see tasks/selectors/chat_options.py)."""
    return answer_options(options)


@dataclass(frozen=True)
class ResolvedComparison:
    baseline: str
    arm: str
    changed: tuple[str, ...]


@dataclass(frozen=True)
class ResolvedExperiment:
    path: Path
    experiment_hash: str
    spec: SelectionExperimentFile
    taskset_dir: Path
    arms: tuple[ResolvedArm, ...]
    comparisons: tuple[ResolvedComparison, ...]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def seeds(self) -> list[int]:
        return self.spec.seeds

    @property
    def versions(self) -> list[str]:
        return sorted({arm.version for arm in self.arms})

    def arm(self, name: str) -> ResolvedArm:
        return next(a for a in self.arms if a.name == name)


def load_experiment_file(path: Path) -> SelectionExperimentFile:
    """Parse the YAML and validate it against SelectionExperimentFile, naming the file and the line."""
    path = Path(path)
    if not path.is_file():
        raise InputError.one(str(path), "", "file-exists", "experiment file not found")
    raw = path.read_bytes()
    data = load_yaml(raw, str(path))
    if not isinstance(data, dict):
        raise InputError.one(str(path), "", "schema", "an experiment file is a YAML mapping")
    try:
        return SelectionExperimentFile.model_validate(data)
    except ValidationError as error:
        problems = [
            Problem(str(path), ".".join(str(p) for p in e["loc"]), "schema", e["msg"]) for e in error.errors()
        ]
        raise InputError(problems) from None


def _merge(defaults: SelectionArmSpec | None, arm: SelectionArmSpec) -> dict[str, Any]:
    merged = defaults.model_dump(exclude={"name"}, exclude_none=True) if defaults else {}
    for key, value in arm.model_dump().items():
        if key == "options":
            merged["options"] = {**merged.get("options", {}), **value}
        elif value is not None:
            merged[key] = value
    return merged


def _changed(a: ResolvedArm, b: ResolvedArm) -> tuple[str, ...]:
    return tuple(r for r in RESPECTS if a.respect(r) != b.respect(r))


def _check_model_arm(merged: dict[str, Any]) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """Hosted-model arms: pinned ids, keys in the environment, prices, routing and judge options
    (see tasks/selectors/chat_options.py); answer-changing defaults are filled in. Nothing is called."""
    options = dict(merged.get("options") or {})
    if merged["selector"] in HOSTED_KINDS:
        filled, problems = check_hosted_arm(merged["selector"], merged["model"], options)
        return problems, filled
    return check_offline_arm(options), options


def version_has_none_labels(taskset_dir: Path, version: str) -> bool:
    """Whether the version's manifest counts any 'none' label (False when it cannot be read: loading the
    version later says what is wrong with it)."""
    try:
        manifest = json.loads(version_paths(taskset_dir, version)["manifest"].read_bytes())
        return int((manifest.get("counts_by_label") or {}).get(NONE_LABEL, 0)) > 0
    except (OSError, ValueError, AttributeError, TypeError):
        return False


def settle_router(selector: str, model_id: str, options: dict[str, Any], has_none_labels: bool, base_dir: Path
                  ) -> tuple[dict[str, Any] | None, str | None, str | None]:
    """(run options, abstain rule, decision model hash) of an arm: its own offline router, or the offline
    router of a routed hosted arm; ValueError for an unusable cut-off or model file."""
    if selector in OFFLINE_ROUTER_KINDS:
        setup = router_setup(selector, model_id, options, has_none_labels=has_none_labels, base_dir=base_dir)
        return setup.options, setup.abstain_rule, setup.model_hash
    router = options.get("router")
    if router in OFFLINE_ROUTER_KINDS:
        setup = router_setup(router, options.get("router_model"), dict(options.get("router_options") or {}),
                             has_none_labels=has_none_labels, base_dir=base_dir)
        return {**options, "router_options": setup.options}, setup.abstain_rule, setup.model_hash
    return None, None, None


def resolve_experiment(path: Path) -> ResolvedExperiment:
    """Everything an experiment refers to, resolved and checked, before any data or model is touched."""
    path = Path(path)
    spec = load_experiment_file(path)
    file = str(path)
    problems: list[Problem] = []
    taskset_dir = (path.parent / spec.taskset).resolve()
    if not taskset_dir.is_dir():
        raise InputError.one(file, "taskset", "taskset-exists", f"task-set folder {taskset_dir} not found")

    if len(spec.seeds) < MIN_SEEDS and not spec.declared.few_seeds:
        problems.append(Problem(file, "seeds", "min-seeds",
                                f"{len(spec.seeds)} seed(s) given; at least {MIN_SEEDS} are needed to see the noise "
                                "floor, unless `declared: {few_seeds: <why>}` says otherwise"))
    if len(set(spec.seeds)) != len(spec.seeds):
        problems.append(Problem(file, "seeds", "seeds-unique", f"seeds repeat: {spec.seeds}"))
    if not spec.seeds:
        problems.append(Problem(file, "seeds", "seeds-given", "no seeds: a run needs at least one (three to see "
                                "the noise floor)"))
    if out_of_range := [s for s in spec.seeds if not 0 <= s < SEED_LIMIT]:
        problems.append(Problem(file, "seeds", "seed-range", f"seeds must be whole numbers from 0 to 2**63 - 1 "
                                f"(they are stored as BIGINT): {out_of_range}"))

    names = [arm.name for arm in spec.arms]
    for name in {n for n in names if names.count(n) > 1}:
        problems.append(Problem(file, f"arm {name}", "arm-names-unique", "two arms share this name"))
    for name in names:
        if not name or set(name) - ARM_NAME_CHARS:
            problems.append(Problem(file, f"arm {name}", "arm-name-chars", "use letters, digits, '.', '_' or '-'"))

    arms: list[ResolvedArm] = []
    catalogues: dict[str, Catalogue | None] = {}
    prompts: dict[str, str] = {}
    for rung, arm in enumerate(spec.arms, start=1):
        merged = _merge(spec.defaults, arm)
        merged.setdefault("version", spec.version)
        missing = [k for k in ("catalogue", "prompt", "model", "selector") if not merged.get(k)]
        if missing:
            problems.append(Problem(file, f"arm {arm.name}", "arm-complete",
                                    f"no {', '.join(missing)} (set it on the arm or under defaults)"))
            continue
        hosted_problems, merged["options"] = _check_model_arm(merged)
        if hosted_problems:
            problems.extend(Problem(file, f"arm {arm.name}", rule, message) for rule, message in hosted_problems)
            continue
        try:
            if merged["catalogue"] not in catalogues:
                catalogues[merged["catalogue"]] = (
                    None if merged["catalogue"] == PER_REQUEST_CATALOGUE
                    else load_catalogue(taskset_dir, merged["catalogue"])
                )
            if merged["prompt"] not in prompts:
                prompts[merged["prompt"]] = load_prompt(taskset_dir, merged["prompt"])
        except InputError as error:
            problems.extend(Problem(file, f"arm {arm.name}", p.rule, f"{p.file}: {p.message}") for p in error.problems)
            continue
        try:
            run_options, abstain_rule, model_hash = settle_router(
                merged["selector"], merged["model"], merged.get("options", {}),
                version_has_none_labels(taskset_dir, merged["version"]), path.parent)
        except ValueError as error:
            problems.append(Problem(file, f"arm {arm.name}", "router-files", str(error)))
            continue
        arms.append(ResolvedArm(
            name=arm.name, rung=rung, catalogue_name=merged["catalogue"], catalogue=catalogues[merged["catalogue"]],
            prompt_name=merged["prompt"], prompt_text=prompts[merged["prompt"]], model_id=merged["model"],
            selector=merged["selector"], version=merged["version"], options=merged.get("options", {}),
            run_options=run_options, abstain_rule=abstain_rule, decision_model_hash=model_hash,
        ))
    if problems:
        raise InputError(problems)

    by_name = {arm.name: arm for arm in arms}
    if spec.comparisons == "ladder":
        pairs = [SelectionComparison(**{"from": a.name, "to": b.name}) for a, b in zip(arms, arms[1:])]
    else:
        pairs = spec.comparisons
    comparisons: list[ResolvedComparison] = []
    for pair in pairs:
        where = f"comparison {pair.baseline} -> {pair.arm}"
        if pair.baseline not in by_name or pair.arm not in by_name:
            problems.append(Problem(file, where, "comparison-arms", "names an arm the experiment does not have"))
            continue
        changed = _changed(by_name[pair.baseline], by_name[pair.arm])
        undeclared = [r for r in changed if r not in pair.declare]
        if not changed:
            problems.append(Problem(file, where, "one-change", "the two arms are identical: nothing is compared"))
        elif len(undeclared) > 1:
            problems.append(Problem(
                file, where, "one-change",
                f"the arms differ in {len(changed)} respects ({', '.join(changed)}); a comparison changes one. "
                f"Declare the others knowingly with `declare: [{', '.join(changed[1:])}]` or split the change",
            ))
        comparisons.append(ResolvedComparison(pair.baseline, pair.arm, changed))
    if problems:
        raise InputError(problems)

    return ResolvedExperiment(
        path=path, experiment_hash=sha256_hex(path.read_bytes()), spec=spec, taskset_dir=taskset_dir,
        arms=tuple(arms), comparisons=tuple(comparisons),
    )
