"""Load a task experiment file and resolve its arms; refuse comparisons that change more than one thing.

Respects: surface (its hash: file, backend source, tools as offered), prompt (its text), model (the pinned
id), agent (its kind and answer-changing options), version. Hosted agents get the selection harness's
checks (pinned ids, keys only from the environment, prices, base_url) before anything runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from schemas.surface.experiment import (
    SURFACE_RESPECTS,
    SurfaceArmSpec,
    SurfaceComparison,
    SurfaceExperimentFile,
)
from tasks.experiment.resolve_experiment import ARM_NAME_CHARS, MIN_SEEDS
from tasks.files.content_hash import sha256_hex
from tasks.files.input_errors import InputError, Problem
from tasks.files.yaml_files import load_yaml
from tasks.selectors.chat_options import ROUTING_OPTIONS, answer_options, check_hosted_arm
from tasks.surface.load_surface import ResolvedSurface, load_surface
from tasks.taskset.load_taskset import load_prompt

BASELINE_MODEL = "tooleval-baseline-bm25-1"
"""The model id of the offline baseline agent when an arm names none."""
BASELINE_OPTIONS = frozenset({"router_options", "threshold"})
AGENT_REFUSED_OPTIONS = ROUTING_OPTIONS | {"judge"}
"""Selection-only options: routing and judging pick one tool, they do not run an agent."""


@dataclass(frozen=True)
class ResolvedTaskArm:
    name: str
    rung: int
    surface: ResolvedSurface
    prompt_name: str
    prompt_text: str
    model_id: str
    agent: str
    version: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def reads_prompt(self) -> bool:
        return self.agent != "baseline"

    @property
    def prompt_hash(self) -> str:
        return sha256_hex(self.prompt_text)

    @property
    def agent_options(self) -> dict[str, Any]:
        return answer_options(self.options)

    @property
    def agent_options_hash(self) -> str:
        return sha256_hex(json.dumps(self.agent_options, sort_keys=True, default=str))

    def respect(self, respect: str) -> Any:
        return {
            "surface": self.surface.surface_hash,
            "prompt": self.prompt_hash,
            "model": self.model_id,
            "agent": json.dumps([self.agent, self.agent_options], sort_keys=True, default=str),
            "version": self.version,
        }[respect]


@dataclass(frozen=True)
class ResolvedTaskComparison:
    baseline: str
    arm: str
    changed: tuple[str, ...]


@dataclass(frozen=True)
class ResolvedTaskExperiment:
    path: Path
    experiment_hash: str
    spec: SurfaceExperimentFile
    taskset_dir: Path
    arms: tuple[ResolvedTaskArm, ...]
    comparisons: tuple[ResolvedTaskComparison, ...]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def seeds(self) -> list[int]:
        return self.spec.seeds

    @property
    def versions(self) -> list[str]:
        return sorted({arm.version for arm in self.arms})

    def arm(self, name: str) -> ResolvedTaskArm:
        return next(a for a in self.arms if a.name == name)


def load_task_experiment_file(path: Path) -> SurfaceExperimentFile:
    path = Path(path)
    if not path.is_file():
        raise InputError.one(str(path), "", "file-exists", "experiment file not found")
    data = load_yaml(path.read_bytes(), str(path))
    if not isinstance(data, dict):
        raise InputError.one(str(path), "", "schema", "an experiment file is a YAML mapping")
    try:
        return SurfaceExperimentFile.model_validate(data)
    except ValidationError as error:
        raise InputError([Problem(str(path), ".".join(str(p) for p in e["loc"]), "schema", e["msg"])
                          for e in error.errors()]) from None


def _merge(defaults: SurfaceArmSpec | None, arm: SurfaceArmSpec) -> dict[str, Any]:
    merged = defaults.model_dump(exclude={"name"}, exclude_none=True) if defaults else {}
    for key, value in arm.model_dump().items():
        if key == "options":
            merged["options"] = {**merged.get("options", {}), **value}
        elif value is not None:
            merged[key] = value
    return merged


def _check_agent(merged: dict[str, Any]) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    options = dict(merged.get("options") or {})
    if merged["agent"] == "baseline":
        unknown = sorted(set(options) - BASELINE_OPTIONS)
        if unknown:
            return [("option-known", f"baseline agent: unknown option(s) {', '.join(unknown)}; "
                                     f"known: {', '.join(sorted(BASELINE_OPTIONS))}")], options
        return [], options
    refused = sorted(set(options) & AGENT_REFUSED_OPTIONS)
    if refused:
        return [("option-known", f"{', '.join(refused)} choose one tool for a selection; an agent runs the task")], options
    filled, problems = check_hosted_arm(merged["agent"], merged["model"], options)
    return problems, filled


def resolve_task_experiment(path: Path) -> ResolvedTaskExperiment:
    """Everything a task experiment refers to, resolved and checked, before any task runs."""
    path = Path(path)
    spec = load_task_experiment_file(path)
    file = str(path)
    problems: list[Problem] = []
    taskset_dir = (path.parent / spec.taskset).resolve()
    if not taskset_dir.is_dir():
        raise InputError.one(file, "taskset", "taskset-exists", f"task-set folder {taskset_dir} not found")
    if len(spec.seeds) < MIN_SEEDS and not spec.declared.few_seeds:
        problems.append(Problem(file, "seeds", "min-seeds", f"{len(spec.seeds)} seed(s) given; at least {MIN_SEEDS} "
                                "are needed to see the noise floor, unless `declared: {few_seeds: <why>}` says otherwise"))
    if len(set(spec.seeds)) != len(spec.seeds):
        problems.append(Problem(file, "seeds", "seeds-unique", f"seeds repeat: {spec.seeds}"))
    names = [arm.name for arm in spec.arms]
    for name in sorted({n for n in names if names.count(n) > 1}):
        problems.append(Problem(file, f"arm {name}", "arm-names-unique", "two arms share this name"))
    for name in names:
        if not name or set(name) - ARM_NAME_CHARS:
            problems.append(Problem(file, f"arm {name}", "arm-name-chars", "use letters, digits, '.', '_' or '-'"))

    arms: list[ResolvedTaskArm] = []
    surfaces: dict[str, ResolvedSurface] = {}
    prompts: dict[str, str] = {}
    for rung, arm in enumerate(spec.arms, start=1):
        merged = _merge(spec.defaults, arm)
        merged.setdefault("version", spec.version)
        if merged.get("agent") == "baseline":
            merged.setdefault("model", BASELINE_MODEL)
        missing = [k for k in ("surface", "prompt", "agent", "model") if not merged.get(k)]
        if missing:
            problems.append(Problem(file, f"arm {arm.name}", "arm-complete",
                                    f"no {', '.join(missing)} (set it on the arm or under defaults)"))
            continue
        agent_problems, merged["options"] = _check_agent(merged)
        if agent_problems:
            problems.extend(Problem(file, f"arm {arm.name}", rule, message) for rule, message in agent_problems)
            continue
        try:
            if merged["surface"] not in surfaces:
                surfaces[merged["surface"]] = load_surface(taskset_dir, merged["surface"])
            if merged["prompt"] not in prompts:
                prompts[merged["prompt"]] = load_prompt(taskset_dir, merged["prompt"])
        except InputError as error:
            problems.extend(Problem(file, f"arm {arm.name}", p.rule, f"{p.file}: {p.where} {p.message}".replace(":  ", ": "))
                            for p in error.problems)
            continue
        arms.append(ResolvedTaskArm(
            name=arm.name, rung=rung, surface=surfaces[merged["surface"]], prompt_name=merged["prompt"],
            prompt_text=prompts[merged["prompt"]], model_id=merged["model"], agent=merged["agent"],
            version=merged["version"], options=merged["options"]))
    if problems:
        raise InputError(problems)

    by_name = {arm.name: arm for arm in arms}
    if spec.comparisons == "ladder":
        pairs = [SurfaceComparison(**{"from": a.name, "to": b.name}) for a, b in zip(arms, arms[1:])]
    else:
        pairs = spec.comparisons
    comparisons: list[ResolvedTaskComparison] = []
    for pair in pairs:
        where = f"comparison {pair.baseline} -> {pair.arm}"
        if pair.baseline not in by_name or pair.arm not in by_name:
            problems.append(Problem(file, where, "comparison-arms", "names an arm the experiment does not have"))
            continue
        a, b = by_name[pair.baseline], by_name[pair.arm]
        changed = tuple(r for r in SURFACE_RESPECTS if a.respect(r) != b.respect(r))
        undeclared = [r for r in changed if r not in pair.declare]
        if not changed:
            problems.append(Problem(file, where, "one-change", "the two arms are identical: nothing is compared"))
        elif len(undeclared) > 1:
            problems.append(Problem(file, where, "one-change",
                                    f"the arms differ in {len(changed)} respects ({', '.join(changed)}); a comparison "
                                    f"changes one. Declare the others knowingly with `declare: [{', '.join(changed[1:])}]` "
                                    "or split the change"))
        comparisons.append(ResolvedTaskComparison(pair.baseline, pair.arm, changed))
    if problems:
        raise InputError(problems)
    return ResolvedTaskExperiment(path=path, experiment_hash=sha256_hex(path.read_bytes()), spec=spec,
                                  taskset_dir=taskset_dir, arms=tuple(arms), comparisons=tuple(comparisons))
