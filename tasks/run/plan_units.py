"""Plan the work: arm x seed x batch of requests, each request with its tools in the seed's order,
its label for that arm, and the cache key of its selection."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Iterator

from schemas.catalogue import NONE_LABEL, ToolSpec
from schemas.taskset import LabelledRequest
from tasks.run.permute_tools import permute_tools, tool_set_id
from tasks.experiment.resolve_experiment import ResolvedArm, ResolvedExperiment
from tasks.selectors.chat_options import answer_options

SECRET_OPTION_WORDS = ("key", "token", "secret", "password")


def effective_label(request: LabelledRequest, offered: set[str]) -> str:
    """The right answer for the tools this arm offers: the label, else the fallback, else 'none'."""
    if request.expected == NONE_LABEL or request.expected in offered:
        return request.expected
    if request.fallback is not None and request.fallback in offered:
        return request.fallback
    return NONE_LABEL


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


_SECRET_OPTION_NAME = re.compile(r"(^|_)(" + "|".join(SECRET_OPTION_WORDS) + r")(_|$)", re.IGNORECASE)
"""Whole words only: 'api_key' and 'auth_token' are dropped, 'max_tokens' (it changes answers) is kept."""


def selector_fingerprint(arm: ResolvedArm) -> str:
    """Everything about the arm, other than tools and messages, that changes an answer: selector, model id,
    prompt and the answer-changing options (sampling, seed, max_tokens, endpoint, routing, judge). Options
    that only change how calls are made or costed (concurrency, timeouts, retries, key names, prices) are
    left out, so changing them repeats no completed call."""
    options = {k: v for k, v in answer_options(arm.options).items() if not _SECRET_OPTION_NAME.search(k)}
    return _digest([arm.selector, arm.model_id, options, arm.prompt_text])


def tools_fingerprint(tools: tuple[ToolSpec, ...]) -> str:
    return _digest([tool.model_dump() for tool in tools])


@dataclass(frozen=True)
class PlannedRequest:
    request: LabelledRequest
    tools: tuple[ToolSpec, ...]
    tool_set_id: str
    expected: str
    expected_position: int | None
    cache_key: str


class WorkUnit:
    """One Prefect task's worth of work: a batch of requests for one arm under one seed.

    A plain class on purpose, not a dataclass: Prefect walks dataclass and pydantic parameters field by
    field looking for futures, twice per task, and a unit holds hundreds of requests with their tools
    (about 0.4 ms a request, more than the selection itself). An instance is a leaf to that walk.
    """

    __slots__ = ("arm", "seed", "batch_index", "requests", "taskset", "taskset_version")

    def __init__(self, *, arm: ResolvedArm, seed: int, batch_index: int, requests: tuple[PlannedRequest, ...],
                 taskset: str, taskset_version: str) -> None:
        self.arm = arm
        self.seed = seed
        self.batch_index = batch_index
        self.requests = requests
        self.taskset = taskset
        self.taskset_version = taskset_version

    def __repr__(self) -> str:
        return f"WorkUnit({self.label}, {len(self.requests)} requests)"

    @property
    def label(self) -> str:
        return f"{self.arm.name}/seed={self.seed}/batch={self.batch_index}"


def plan_arm_seed(
    arm: ResolvedArm, seed: int, requests: tuple[LabelledRequest, ...], taskset: str, batch_size: int
) -> Iterator[WorkUnit]:
    """The work units of one arm under one seed."""
    fingerprint = selector_fingerprint(arm)
    shared_tools: tuple[ToolSpec, ...] | None = None
    shared_fp = shared_set = ""
    if arm.catalogue is not None:
        shared_tools = permute_tools(arm.catalogue.tools, seed)
        shared_fp = tools_fingerprint(shared_tools)
        shared_set = tool_set_id([t.name for t in shared_tools])
    planned: list[PlannedRequest] = []
    for request in requests:
        if request.tools is not None:
            tools = permute_tools(request.tools, seed)
            tools_fp, set_id = tools_fingerprint(tools), tool_set_id([t.name for t in tools])
        else:
            assert shared_tools is not None, "a request without its own tools needs a catalogue"
            tools, tools_fp, set_id = shared_tools, shared_fp, shared_set
        names = [tool.name for tool in tools]
        expected = effective_label(request, set(names))
        position = names.index(expected) + 1 if expected != NONE_LABEL else None
        messages = [m.model_dump() for m in request.messages]
        planned.append(PlannedRequest(
            request=request, tools=tools, tool_set_id=set_id, expected=expected, expected_position=position,
            cache_key=_digest([fingerprint, tools_fp, messages]),
        ))
    for index, start in enumerate(range(0, len(planned), batch_size)):
        yield WorkUnit(arm=arm, seed=seed, batch_index=index, requests=tuple(planned[start:start + batch_size]),
                       taskset=taskset, taskset_version=arm.version)


def plan_units(
    experiment: ResolvedExperiment, requests_by_version: dict[str, tuple[LabelledRequest, ...]], taskset: str
) -> list[WorkUnit]:
    """Every work unit of the experiment: arms in ladder order, then seeds, then batches."""
    return [
        unit
        for arm in experiment.arms
        for seed in experiment.seeds
        for unit in plan_arm_seed(arm, seed, requests_by_version[arm.version], taskset, experiment.spec.batch_size)
    ]
