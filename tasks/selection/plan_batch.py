"""A selection unit's batch as its arm and seed see it: each request with its tools in the seed's order, its
label for the tools offered and the cache key of its selection.

A unit's batch is a slice of the version's request table (``tasks/taskset/request_table.py``, the columns
``BATCH_COLUMNS``); ``plan_batch`` runs inside the unit's task and its per-request objects are dropped with
the batch's rows."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from schemas.catalogue import NONE_LABEL, ToolSpec
from schemas.expected_arguments import ExpectedArgument
from schemas.taskset import Message, labelled_answer
from tasks.run.cache_keys import digest, keyed_options, tools_fingerprint
from tasks.run.permute_tools import permute_tools, tool_set_id
from tasks.selectors.arm_options import answer_options
from tasks.selectors.routers.router_setup import SCORING_REVISIONS
from tasks.taskset.request_table import as_request_table, parse_expected_arguments, parse_messages, parse_tools

if TYPE_CHECKING:
    import polars as pl

    from schemas.taskset import LabelledRequest
    from tasks.core_records import WorkUnit
    from tasks.taskset.load_taskset import TaskSetVersion
    from tasks.selection.arms import SelectionArm


def selector_fingerprint(arm: "SelectionArm") -> str:
    """Everything about the arm, other than tools and messages, that changes an answer: selector, model id,
    prompt and the answer-changing options (sampling, seed, max_tokens, endpoint, routing, judge), and the
    scoring revision of the offline router that answers or routes (``SCORING_REVISIONS``; only when it has
    one, so other keys stay those of earlier versions). Options that only change how calls are made or
    costed (concurrency, timeouts, retries, key names, prices) are left out, so changing them repeats no
    completed call."""
    options = keyed_options(answer_options(arm.selector_options))
    if arm.decision_model_hash is not None:
        options = _model_file_by_content(options, arm.decision_model_hash)
    parts = [arm.selector, arm.model_id, options, arm.prompt_text]
    revisions = [SCORING_REVISIONS[kind] for kind in (arm.selector, arm.selector_options.get("router"))
                 if kind in SCORING_REVISIONS]
    return digest(parts + [{"scoring": revisions}] if revisions else parts)


def _model_file_by_content(options: dict[str, Any], model_hash: str) -> dict[str, Any]:
    """``model_file`` (a path, absolute once resolved), at any depth, as the file's sha256: where the task set
    lies changes no answer, so a copied folder keeps its cache; another model file is another key."""
    return {name: ("sha256:" + model_hash if name == "model_file"
                   else _model_file_by_content(value, model_hash) if isinstance(value, dict) else value)
            for name, value in options.items()}


def cache_key(selector_fp: str, tools_fp: str, messages_json: str) -> str:
    """The selection's cache key: ``digest([selector_fp, tools_fp, messages])`` written out, since the
    table holds the messages already as the canonical JSON ``digest`` would write (sorted keys, not ASCII
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
    """The right answer among the tools offered, spelled as the arm offers it (``effective_label``)."""
    label: str
    """The same answer as the version labels it (differs from ``expected`` under a catalogue's ``offered_as``)."""
    expected_position: int | None
    cache_key: str
    expected_arguments: dict[str, ExpectedArgument] | None = None
    """What the right tool's call must hold (the version's label only: a fallback's arguments are not known)."""

    @property
    def messages(self) -> tuple[Message, ...]:
        return parse_messages(self.messages_json)


BATCH_COLUMNS = ("id", "messages", "expected", "fallback", "slice", "intent", "label_status", "tools",
                 "expected_arguments")
"""The request-table columns a selection work unit carries."""


def request_batches(version: "TaskSetVersion") -> "pl.DataFrame":
    """What a version's selection units are batches of: its request table's ``BATCH_COLUMNS``."""
    return version.table.select(BATCH_COLUMNS)


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


def plan_batch(unit: "WorkUnit") -> tuple[PlannedRequest, ...]:
    """Each request of the unit's batch with its tools in the seed's order, its label for the tools offered
    and its cache key. The arm's catalogue is permuted and fingerprinted once per batch, not once per
    request; a request with its own tools has them permuted on its own."""
    selector_fp = selector_fingerprint(unit.arm)
    shared = _OfferedTools.of(unit.arm.catalogue.tools, unit.seed) if unit.arm.catalogue is not None else None
    offered_as = unit.arm.catalogue.offered_as if unit.arm.catalogue is not None else None
    planned = []
    columns = [unit.batch.get_column(name).to_list() for name in BATCH_COLUMNS]
    for request_id, messages, expected, fallback, slice_, intent, status, own_tools, arguments in zip(*columns):
        if own_tools is not None:
            offered = _OfferedTools.of(parse_tools(own_tools) or (), unit.seed)
            label, spelled = labelled_answer(expected, fallback, offered.name_set)
        else:
            assert shared is not None, "a request without its own tools needs a catalogue"
            offered = shared
            label, spelled = labelled_answer(expected, fallback, offered.name_set, offered_as)
        planned.append(PlannedRequest(
            request_id=request_id, messages_json=messages, slice=slice_, intent=intent, label_status=status,
            tools=offered.tools, offered=offered.name_set, tool_set_id=offered.set_id, expected=spelled, label=label,
            expected_position=offered.names.index(spelled) + 1 if spelled != NONE_LABEL else None,
            cache_key=cache_key(selector_fp, offered.fingerprint, messages),
            expected_arguments=parse_expected_arguments(arguments) if label == expected else None,
        ))
    return tuple(planned)


def plan_arm_seed(arm: "SelectionArm", seed: int, requests: "pl.DataFrame | Sequence[LabelledRequest]", taskset: str,
                  batch_size: int) -> list["WorkUnit"]:
    """The units of one arm under one seed over labelled requests (models, or a request table), as the core
    plans them (``work_units.plan_units``) for a prepared run."""
    from tasks.run.work_units import arm_seed_units

    return arm_seed_units(arm, seed, as_request_table(requests).select(BATCH_COLUMNS), taskset, batch_size)
