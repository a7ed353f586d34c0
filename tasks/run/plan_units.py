"""Plan the work: arm x seed x batch of requests.

A work unit is its arm, its seed and its batch: a slice of the version's request table
(``tasks/taskset/request_table.py``), not one object per request. What each request needs for that arm
and seed (its tools in the seed's order, its label for the tools offered, the cache key of its selection)
is worked out per batch by ``plan_batch``, inside the unit's task, and dropped with the batch's rows.
Planning a 1M-row run thus holds the request table once plus a few hundred bytes a unit."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Collection, Iterator, Mapping, Sequence

import polars as pl

from schemas.catalogue import NONE_LABEL, ToolSpec
from schemas.taskset import LabelledRequest, Message
from tasks.run.permute_tools import permute_tools, tool_set_id
from tasks.experiment.resolve_experiment import ResolvedArm, ResolvedExperiment
from tasks.selectors.chat_options import answer_options
from tasks.taskset.request_table import as_request_table, parse_messages, parse_tools

SECRET_OPTION_WORDS = ("key", "token", "secret", "password")


def effective_label(expected: str, fallback: str | None, offered: Collection[str]) -> str:
    """The right answer for the tools this arm offers: the label, else the fallback, else 'none'."""
    if expected == NONE_LABEL or expected in offered:
        return expected
    if fallback is not None and fallback in offered:
        return fallback
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
    options = {k: v for k, v in answer_options(arm.selector_options).items() if not _SECRET_OPTION_NAME.search(k)}
    return _digest([arm.selector, arm.model_id, options, arm.prompt_text])


def tools_fingerprint(tools: tuple[ToolSpec, ...]) -> str:
    return _digest([tool.model_dump() for tool in tools])


def cache_key(selector_fp: str, tools_fp: str, messages_json: str) -> str:
    """The selection's cache key: ``_digest([selector_fp, tools_fp, messages])`` written out, since the
    table holds the messages already as the canonical JSON ``_digest`` would write (sorted keys, not ASCII
    escaped, default separators); the two hex digests need no escaping. Keys are those of earlier versions,
    so existing caches keep answering."""
    return hashlib.sha256(f'["{selector_fp}", "{tools_fp}", {messages_json}]'.encode()).hexdigest()


@dataclass(frozen=True)
class PlannedRequest:
    """One request of a batch as one arm under one seed sees it (built per batch by ``plan_batch``)."""

    request_id: str
    messages_json: str
    """The conversation as canonical JSON (``request_table.messages_json``)."""
    slice: str
    intent: str | None
    label_status: str
    tools: tuple[ToolSpec, ...]
    """The tools offered, in the seed's order."""
    offered: frozenset[str]
    """Their names."""
    tool_set_id: str
    expected: str
    """The right answer among the tools offered (``effective_label``)."""
    expected_position: int | None
    cache_key: str

    @property
    def messages(self) -> tuple[Message, ...]:
        return parse_messages(self.messages_json)


BATCH_COLUMNS = ("id", "messages", "expected", "fallback", "slice", "intent", "label_status", "tools")
"""The request-table columns a work unit carries."""


class WorkUnit:
    """One Prefect task's worth of work: a batch of requests for one arm under one seed.

    ``batch`` is the batch's rows of the version's request table: in the planning process a zero-copy
    slice of the one table (a unit costs a few hundred bytes, however many requests it covers); pickled
    (Dask and Ray workers) a polars frame carries only its own rows, about 0.3 KB a request, never the
    whole table. The per-request planning (``requests``) is done where the unit runs.

    A plain class on purpose, not a dataclass: Prefect walks dataclass and pydantic parameters field by
    field looking for futures, twice per task; an instance is a leaf to that walk.
    """

    __slots__ = ("arm", "seed", "batch_index", "batch", "taskset", "taskset_version")

    def __init__(self, *, arm: ResolvedArm, seed: int, batch_index: int, batch: pl.DataFrame,
                 taskset: str, taskset_version: str) -> None:
        self.arm = arm
        self.seed = seed
        self.batch_index = batch_index
        self.batch = batch
        self.taskset = taskset
        self.taskset_version = taskset_version

    def __repr__(self) -> str:
        return f"WorkUnit({self.label}, {self.n_requests} requests)"

    @property
    def label(self) -> str:
        return f"{self.arm.name}/seed={self.seed}/batch={self.batch_index}"

    @property
    def n_requests(self) -> int:
        return self.batch.height

    @property
    def requests(self) -> tuple[PlannedRequest, ...]:
        """The batch planned for this arm and seed; computed on each access (``plan_batch``)."""
        return plan_batch(self)


@dataclass(frozen=True)
class _OfferedTools:
    tools: tuple[ToolSpec, ...]
    names: tuple[str, ...]
    name_set: frozenset[str]
    fingerprint: str
    set_id: str

    @classmethod
    def of(cls, tools: Sequence[ToolSpec], seed: int) -> "_OfferedTools":
        ordered = permute_tools(tools, seed)
        names = tuple(tool.name for tool in ordered)
        return cls(ordered, names, frozenset(names), tools_fingerprint(ordered), tool_set_id(names))


def plan_batch(unit: WorkUnit) -> tuple[PlannedRequest, ...]:
    """Each request of the unit's batch with its tools in the seed's order, its label for the tools offered
    and its cache key. The arm's catalogue is permuted and fingerprinted once per batch (~0.4 ms for 30
    tools, under 1 us a request); a request with its own tools has them permuted on its own."""
    selector_fp = selector_fingerprint(unit.arm)
    shared = _OfferedTools.of(unit.arm.catalogue.tools, unit.seed) if unit.arm.catalogue is not None else None
    planned = []
    columns = [unit.batch.get_column(name).to_list() for name in BATCH_COLUMNS]
    for request_id, messages, expected, fallback, slice_, intent, status, own_tools in zip(*columns):
        if own_tools is not None:
            offered = _OfferedTools.of(parse_tools(own_tools) or (), unit.seed)
        else:
            assert shared is not None, "a request without its own tools needs a catalogue"
            offered = shared
        label = effective_label(expected, fallback, offered.name_set)
        planned.append(PlannedRequest(
            request_id=request_id, messages_json=messages, slice=slice_, intent=intent, label_status=status,
            tools=offered.tools, offered=offered.name_set, tool_set_id=offered.set_id, expected=label,
            expected_position=offered.names.index(label) + 1 if label != NONE_LABEL else None,
            cache_key=cache_key(selector_fp, offered.fingerprint, messages),
        ))
    return tuple(planned)


def plan_arm_seed(
    arm: ResolvedArm, seed: int, requests: pl.DataFrame | Sequence[LabelledRequest], taskset: str, batch_size: int
) -> Iterator[WorkUnit]:
    """The work units of one arm under one seed: slices of the request table (built from ``requests``
    when they are models)."""
    table = as_request_table(requests).select(BATCH_COLUMNS)
    for index, start in enumerate(range(0, table.height, batch_size)):
        yield WorkUnit(arm=arm, seed=seed, batch_index=index, batch=table.slice(start, batch_size),
                       taskset=taskset, taskset_version=arm.version)


def plan_units(
    experiment: ResolvedExperiment, requests_by_version: Mapping[str, pl.DataFrame | Sequence[LabelledRequest]],
    taskset: str,
) -> list[WorkUnit]:
    """Every work unit of the experiment: arms in ladder order, then seeds, then batches."""
    tables = {version: as_request_table(requests) for version, requests in requests_by_version.items()}
    return [
        unit
        for arm in experiment.arms
        for seed in experiment.seeds
        for unit in plan_arm_seed(arm, seed, tables[arm.version], taskset, experiment.spec.batch_size)
    ]
