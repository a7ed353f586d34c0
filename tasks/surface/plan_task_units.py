"""Plan the work: arm x seed x batch of tasks, each task with its merged fixtures, the surface's tools in
the seed's order, and the cache key of its outcome."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from schemas.catalogue import ToolSpec
from schemas.surface.task import SurfaceTask
from tasks.files.content_hash import sha256_hex
from tasks.run.permute_tools import permute_tools
from tasks.run.plan_units import _SECRET_OPTION_NAME, tools_fingerprint
from tasks.surface.load_tasks import TaskVersion
from tasks.surface.resolve_task_experiment import ResolvedTaskArm, ResolvedTaskExperiment


def _digest(value: Any) -> str:
    return sha256_hex(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


def agent_fingerprint(arm: ResolvedTaskArm) -> str:
    """What about the arm, besides its tools and the task, changes an outcome: the agent, its pinned model,
    its answer-changing options and, for agents that read it, the prompt. The baseline does not read the
    prompt, so two of its arms that differ only in the prompt share their outcomes."""
    options = {k: v for k, v in arm.agent_options.items() if not _SECRET_OPTION_NAME.search(k)}
    return _digest([arm.agent, arm.model_id, options, arm.prompt_text if arm.reads_prompt else None])


def task_cache_key(arm: ResolvedTaskArm, tools: tuple[ToolSpec, ...], task: SurfaceTask,
                   fixtures: dict[str, Any]) -> str:
    return _digest([agent_fingerprint(arm), tools_fingerprint(tools), arm.surface.surface_hash,
                    task.model_dump(mode="json", by_alias=True), fixtures])


@dataclass(frozen=True)
class PlannedTask:
    task: SurfaceTask
    fixtures: dict[str, Any]
    cache_key: str


class TaskUnit:
    """One Prefect task's worth of work: a batch of tasks for one arm under one seed (a plain class, so
    Prefect does not walk its contents looking for futures)."""

    __slots__ = ("arm", "seed", "batch_index", "tasks", "tools", "taskset", "taskset_version")

    def __init__(self, *, arm: ResolvedTaskArm, seed: int, batch_index: int, tasks: tuple[PlannedTask, ...],
                 tools: tuple[ToolSpec, ...], taskset: str, taskset_version: str) -> None:
        self.arm = arm
        self.seed = seed
        self.batch_index = batch_index
        self.tasks = tasks
        self.tools = tools
        self.taskset = taskset
        self.taskset_version = taskset_version

    def __repr__(self) -> str:
        return f"TaskUnit({self.label}, {len(self.tasks)} tasks)"

    @property
    def label(self) -> str:
        return f"{self.arm.name}/seed={self.seed}/batch={self.batch_index}"


def plan_task_units(experiment: ResolvedTaskExperiment, versions: dict[str, TaskVersion]) -> list[TaskUnit]:
    """Every unit: arms in order, then seeds, then batches of ``batch_size`` tasks."""
    units: list[TaskUnit] = []
    size = experiment.spec.batch_size
    for arm in experiment.arms:
        version = versions[arm.version]
        for seed in experiment.seeds:
            tools = permute_tools(arm.surface.specs, seed)
            planned = []
            for task in version.tasks:
                fixtures = version.fixtures(task)
                planned.append(PlannedTask(task, fixtures, task_cache_key(arm, tools, task, fixtures)))
            for index, start in enumerate(range(0, len(planned), size)):
                units.append(TaskUnit(arm=arm, seed=seed, batch_index=index, tasks=tuple(planned[start:start + size]),
                                      tools=tools, taskset=version.taskset, taskset_version=arm.version))
    return units
