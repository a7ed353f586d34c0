"""Resample live traffic into a new task-set version (plain functions; ``flows/resample.py`` wraps them).

draw: read the window's turns -> mask personal data (nothing unmasked goes further) -> production weights
-> distinct requests -> remove those already in earlier versions -> allocate per tool -> draw, skipping
near-duplicates. check: the label checks (Great Expectations) on the draft, in memory. publish: the
version (provisional labels, frozen manifest with parent, window, seed and counts), the window's weights,
the labelling queue and ``resamples/<version>.json``.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from schemas.catalogue import NONE_LABEL
from schemas.taskset import LabelledRequest, ProductionWeights
from schemas.traffic import (
    HINT_SOURCE,
    MaskingRules,
    ProductionTurn,
    ResampleSummary,
    SamplingPlan,
    ToolSampleCount,
    TrafficConfig,
    Window,
)
from tasks.files.atomic_write import write_exclusive
from tasks.files.yaml_files import load_yaml
from tasks.files.input_errors import InputError
from tasks.taskset.load_taskset import load_version
from tasks.traffic.labelling_queue import last_partial_import, queue_items, queue_path, write_queue
from tasks.traffic.mask_personal_data import Masker
from tasks.traffic.near_duplicates import NearDuplicateIndex, conversation_text, normalise
from tasks.traffic.production_weights import (
    check_weights_writable,
    first_tool_counts,
    production_weights,
    weights_path,
    write_weights,
)
from tasks.traffic.publish_version import (
    VersionDraft,
    all_catalogues,
    check_draft,
    manifests,
    publish,
)
from tasks.traffic.read_turns import TrafficSource, newest_turn_time, read_turns
from tasks.traffic.stratified_sample import Candidate, Draw, allocate, distinct_candidates, draw
from tasks.traffic.version_age import version_is_adjudicated
from tasks.traffic.window import last_complete_weeks, parse_window, sampling_seed_for

CONFIG_FILE = Path("production") / "traffic.yaml"


def load_traffic_config(taskset_dir: Path) -> TrafficConfig | None:
    """``<taskset>/production/traffic.yaml``, or None when the task set has none."""
    path = Path(taskset_dir) / CONFIG_FILE
    if not path.is_file():
        return None
    data = load_yaml(path.read_bytes(), str(path))
    try:
        return TrafficConfig.model_validate(data or {})
    except ValidationError as error:
        raise InputError.one(str(path), "", "traffic-config", str(error).splitlines()[0]) from None


@dataclass(frozen=True)
class ResampleSettings:
    """What a resample reads and how it draws, from ``production/traffic.yaml`` and the run's overrides."""

    source: TrafficSource
    window: Window
    plan: SamplingPlan
    masking: MaskingRules
    newest_turn: datetime | None


@dataclass(frozen=True)
class ResampleDraft:
    """Everything a resample decided, in memory and masked, before anything is written."""

    taskset_dir: Path
    settings: ResampleSettings
    n_turns: int
    counts: dict[str, int]
    """Turns per first tool in the window, 'none' and unknown tools included."""
    unknown_tools: dict[str, int]
    masked: dict[str, int]
    n_distinct: int
    n_earlier_duplicates: int
    available: dict[str, int]
    targets: dict[str, int]
    drawn: Draw
    weights: ProductionWeights
    version: VersionDraft
    candidates_by_request: dict[str, Candidate]

    @property
    def weights_path(self) -> Path:
        return weights_path(self.taskset_dir, self.settings.window.id)


def parent_version(taskset_dir: Path) -> str | None:
    """The newest adjudicated version (by creation time), else the newest version."""
    found = manifests(taskset_dir)
    adjudicated = [(m.created_at, v) for v, m in found.items() if version_is_adjudicated(taskset_dir, v)]
    if adjudicated:
        return max(adjudicated)[1]
    return max(((m.created_at, v) for v, m in found.items()), default=(None, None))[1]


def slices_by_label(taskset_dir: Path, parent: str | None) -> tuple[dict[str, str], list[str], str]:
    """Each label's most common slice in the parent version, the parent's slices, and the default slice."""
    if parent is None:
        return {}, ["production"], "production"
    loaded = load_version(taskset_dir, parent)
    per_label: dict[str, Counter[str]] = {}
    for request in loaded.requests:
        per_label.setdefault(request.expected, Counter())[request.slice] += 1
    default = Counter(r.slice for r in loaded.requests).most_common(1)[0][0] if loaded.requests else "production"
    return ({label: min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for label, c in per_label.items()},
            list(loaded.manifest.slices), default)


def interrupted_draws(taskset_dir: Path, settings: ResampleSettings) -> set[str]:
    """Versions of this same draw (window and seed) whose run stopped before writing their summary.

    They are not 'earlier versions' of the draw: left out, the draw comes out identical and ``publish``
    finds the version instead of writing another; the weights, queue and summary are then completed.
    """
    return {version for version, manifest in manifests(taskset_dir).items()
            if manifest.window == settings.window.id and manifest.sampling_seed == settings.plan.seed
            and not (Path(taskset_dir) / "resamples" / f"{version}.json").is_file()
            and manifest.notes.startswith("Resampled")}


def earlier_texts(taskset_dir: Path, masker: Masker, skip: set[str] = frozenset()) -> list[str]:
    """Every request of every version (but ``skip``), masked like the traffic, as conversation text."""
    texts = []
    for version in manifests(taskset_dir):
        if version in skip:
            continue
        for request in load_version(taskset_dir, version).requests:
            texts.append(conversation_text(masker.mask_messages(request.messages)))
    return texts


def resample_settings(
    taskset_dir: Path | str,
    *,
    traffic: str | Path | None = None,
    traffic_format: str | None = None,
    traffic_table: str | None = None,
    window: str | None = None,
    weeks: int | None = None,
    now: datetime | None = None,
    seed: int | None = None,
    sampling: dict[str, Any] | None = None,
    masking: dict[str, list[str] | None] | None = None,
) -> ResampleSettings:
    """Arguments override ``production/traffic.yaml``; the default window is the last complete weeks.
    ``sampling`` holds fields of the sampling plan and ``masking`` fields of the masking rules (e.g.
    ``order_ids``); a None value leaves the file's (or the default) in place."""
    taskset_dir = Path(taskset_dir)
    config = load_traffic_config(taskset_dir)
    if traffic is None and config is None:
        raise InputError.one(str(taskset_dir / CONFIG_FILE), "", "traffic-config",
                             "no production log given and the task set has no production/traffic.yaml")
    source = TrafficSource(
        path=Path(traffic) if traffic is not None else taskset_dir / config.log,
        format=traffic_format or (config.format if config else "auto"),
        table=traffic_table or (config.table if config else "turns"),
    )
    newest = newest_turn_time(source)
    chosen_window = (parse_window(window) if window else last_complete_weeks(
        weeks or (config.window_weeks if config else 4), now or datetime.now(timezone.utc), newest))
    try:
        plan = SamplingPlan(**{**(config.sampling if config else {}), **given(sampling),
                               "seed": seed if seed is not None else sampling_seed_for(chosen_window)})
    except ValidationError as error:
        raise InputError.one(str(taskset_dir / CONFIG_FILE), "sampling", "sampling-plan",
                             str(error).splitlines()[0]) from None
    rules = (config.masking if config else MaskingRules()).model_copy(update=given(masking))
    return ResampleSettings(source=source, window=chosen_window, plan=plan, masking=rules, newest_turn=newest)


def given(options: dict[str, Any] | None) -> dict[str, Any]:
    """The ``options`` that are not None."""
    return {key: value for key, value in (options or {}).items() if value is not None}


def previous_resample(taskset_dir: Path | str, settings: ResampleSettings) -> ResampleSummary | None:
    """A version already drawn from the same log, window, plan and masking (a repeated or retried run)."""
    for path in sorted((Path(taskset_dir) / "resamples").glob("v*.json")):
        summary = ResampleSummary.model_validate_json(path.read_bytes())
        if (summary.source == settings.source.name and summary.window.id == settings.window.id
                and summary.plan == settings.plan and summary.masking == settings.masking
                and (Path(taskset_dir) / f"{summary.version}.manifest.json").is_file()):
            return _after_queue_imports(Path(taskset_dir), summary.model_copy(update={"reused": True}))
    return None


def _after_queue_imports(taskset_dir: Path, summary: ResampleSummary) -> ResampleSummary:
    """A found draw as it stands now: the newest version imports of its queue made (each the child of the one
    before), with that version's queue of what is still provisional, so a weekly run measures the labels people
    decided and points labellers at what is left."""
    newest = last_partial_import(taskset_dir, summary.version).version
    if newest == summary.version:
        return summary
    rest = queue_path(taskset_dir, newest)
    return summary.model_copy(update={"drawn_as": summary.version, "version": newest,
                                      "queue_file": str(rest.relative_to(taskset_dir)) if rest.is_file() else ""})


def draw_resample(taskset_dir: Path | str, settings: ResampleSettings) -> ResampleDraft:
    """Read, mask, weigh and draw; writes nothing."""
    taskset_dir = Path(taskset_dir)
    source, chosen_window, plan, masking = settings.source, settings.window, settings.plan, settings.masking
    masker = Masker(masking)
    masked_counts: Counter[str] = Counter()
    turns: list[ProductionTurn] = [masker.mask_turn(t, masked_counts) for t in read_turns(source, chosen_window)]
    if not turns:
        raise InputError.one(str(source.path), chosen_window.id, "window-has-traffic",
                             f"no turn between {chosen_window.start:%Y-%m-%d} and {chosen_window.end:%Y-%m-%d}")

    catalogue_tools = {name for c in all_catalogues(taskset_dir) for name in c.names}
    counts = first_tool_counts(turns)
    unknown = {t: n for t, n in sorted(counts.items()) if t != NONE_LABEL and t not in catalogue_tools}
    weights = production_weights(counts, chosen_window, source.name, catalogue_tools)
    check_weights_writable(taskset_dir, weights)

    earlier = earlier_texts(taskset_dir, masker, skip=interrupted_draws(taskset_dir, settings))
    earlier_keys = {normalise(text) for text in earlier}
    candidates = [c for c in distinct_candidates(turns) if c.hint not in unknown]
    fresh = [c for c in candidates if c.key not in earlier_keys]
    by_stratum: dict[str, list[Candidate]] = {}
    for candidate in fresh:
        by_stratum.setdefault(candidate.hint, []).append(candidate)
    volumes = {t: n for t, n in counts.items() if t not in unknown}
    available = {t: len(by_stratum.get(t, [])) for t in volumes}
    targets = allocate(volumes, available, plan)
    drawn = draw(by_stratum, targets, plan.seed, NearDuplicateIndex(plan.near_duplicate_threshold, earlier))

    parent = parent_version(taskset_dir)
    slice_of, slices, default_slice = slices_by_label(taskset_dir, parent)
    requests: list[LabelledRequest] = []
    by_request: dict[str, Candidate] = {}
    for candidate in sorted((c for picked in drawn.chosen.values() for c in picked),
                            key=lambda c: (c.turn.time, c.turn.turn_id)):
        request = LabelledRequest(
            id=f"prod-{candidate.turn.turn_id}", messages=candidate.messages, expected=candidate.hint,
            slice=slice_of.get(candidate.hint, default_slice), label_status="provisional",
        )
        requests.append(request)
        by_request[request.id] = candidate
    if not requests:
        raise InputError.one(str(source.path), chosen_window.id, "sample-non-empty",
                             "every request of the window is already in an earlier version")
    if default_slice not in slices and any(r.slice == default_slice for r in requests):
        slices.append(default_slice)
    version = VersionDraft(
        taskset_dir=taskset_dir, requests=tuple(requests), adjudications=(), slices=slices, parent=parent,
        window=chosen_window.id, sampling_seed=plan.seed,
        notes=(f"Resampled from {source.name}, window {chosen_window.id}: {len(turns):,} turns, "
               f"{len(candidates):,} distinct masked requests, {len(requests)} drawn ({plan_description(plan)}). "
               f"Labels are provisional ({HINT_SOURCE}): "
               "import the adjudicated labelling queue to decide them."),
    )
    return ResampleDraft(
        taskset_dir=taskset_dir, settings=settings, n_turns=len(turns), counts=dict(counts), unknown_tools=unknown,
        masked=dict(sorted(masked_counts.items())), n_distinct=len(candidates),
        n_earlier_duplicates=len(candidates) - len(fresh), available=available, targets=targets, drawn=drawn,
        weights=weights, version=version, candidates_by_request=by_request,
    )


def check_resample(draft: ResampleDraft):
    """Label checks (Great Expectations) on the draft version and the window's weights."""
    return check_draft(draft.version, draft.weights, draft.weights_path)


def publish_resample(draft: ResampleDraft) -> ResampleSummary:
    """Write the version, its weights, its queue and its summary; an identical earlier draw is reused."""
    manifest, reused = publish(draft.version)
    weights_file = write_weights(draft.taskset_dir, draft.weights)
    queue_file = queue_path(draft.taskset_dir, manifest.version)
    requests = list(load_version(draft.taskset_dir, manifest.version).requests)
    write_queue(queue_file, queue_items(manifest.taskset, manifest.version, requests, draft.candidates_by_request))
    total = sum(n for t, n in draft.counts.items() if t not in draft.unknown_tools)
    per_tool = [
        ToolSampleCount(tool=t, turns=n, share=n / total, candidates=draft.available.get(t, 0),
                        target=draft.targets.get(t, 0), sampled=len(draft.drawn.chosen.get(t, [])),
                        shortfall=max(draft.targets.get(t, 0) - len(draft.drawn.chosen.get(t, [])), 0))
        for t, n in sorted(draft.counts.items(), key=lambda kv: (-kv[1], kv[0])) if t not in draft.unknown_tools
    ]
    settings = draft.settings
    summary = ResampleSummary(
        taskset=manifest.taskset, version=manifest.version, parent=manifest.parent, reused=reused,
        source=settings.source.name, window=settings.window,
        weights_file=str(weights_file.relative_to(draft.taskset_dir)),
        queue_file=str(queue_file.relative_to(draft.taskset_dir)), plan=settings.plan, masking=settings.masking,
        n_turns=draft.n_turns, n_distinct=draft.n_distinct,
        n_near_duplicates_removed=draft.drawn.near_duplicates_skipped,
        n_earlier_duplicates_removed=draft.n_earlier_duplicates, masked=draft.masked,
        unknown_tools=draft.unknown_tools, newest_turn=settings.newest_turn, per_tool=per_tool,
    )
    summary_file = draft.taskset_dir / "resamples" / f"{manifest.version}.json"
    write_exclusive(summary_file, (json.dumps(summary.model_dump(mode="json"), indent=2) + "\n").encode())
    return summary


def resample_version(taskset_dir: Path | str, **options: Any) -> ResampleSummary:
    """settings -> (an identical earlier draw, or draw -> check -> publish), for the CLI; the flow runs the
    same steps as tasks."""
    settings = resample_settings(taskset_dir, **options)
    if previous := previous_resample(taskset_dir, settings):
        return previous
    draft = draw_resample(taskset_dir, settings)
    check_resample(draft)
    return publish_resample(draft)


def plan_description(plan: SamplingPlan) -> str:
    floors = f"floor {plan.floor_per_tool} per tool, {plan.floor_none} for none"
    if plan.targets is not None:
        return f"a target count per tool for {len(plan.targets)} tools, {floors}"
    if plan.target_half_width is not None:
        return (f"the planner's count for +-{100 * plan.target_half_width:g} points at {100 * plan.planner_accuracy:g}% "
                f"for tools with >= {100 * plan.planner_min_share:g}% of turns, {floors}")
    return f"{floors}, the rest of {plan.size} by volume"


def load_targets(path: Path | str) -> dict[str, int]:
    """A target count per tool (``{"refund_order": 120, ...}``), e.g. written by the sample-size planner."""
    path = Path(path)
    if not path.is_file():
        raise InputError.one(str(path), "", "file-exists", "targets file not found")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise InputError.one(str(path), f"line {error.lineno}", "json", error.msg) from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, int) and v >= 0
                                             for k, v in data.items()):
        raise InputError.one(str(path), "", "targets-schema", "a JSON object: tool name -> non-negative count")
    return data


def describe_resample(summary: ResampleSummary, taskset_dir: str | Path) -> list[str]:
    """What a resample did, as lines for the terminal; paths under ``taskset_dir`` as the user gave it, so the
    commands they end with can be pasted."""
    at = Path(taskset_dir)
    weights, queue = at / summary.weights_file, at / summary.queue_file
    head = "found an identical earlier draw:" if summary.reused else "wrote"
    labels = (f"drawn as {summary.drawn_as}, labels imported since" if summary.drawn_as
              else "provisional labels")
    lines = [
        f"{head} {summary.taskset} {summary.version} (parent {summary.parent or '-'}), {labels}",
        f"window {summary.window.id} ({summary.window.start:%Y-%m-%d}..{summary.window.end:%Y-%m-%d}) of "
        f"{summary.source}: {summary.n_turns:,} turns, {summary.n_distinct:,} distinct masked requests; "
        f"{summary.n_earlier_duplicates_removed:,} already in earlier versions, "
        f"{summary.n_near_duplicates_removed:,} near-duplicates skipped",
        "masked: " + (", ".join(f"{n:,} {kind}" for kind, n in summary.masked.items()) or "nothing"),
        f"sampling seed {summary.plan.seed}: {sum(t.sampled for t in summary.per_tool)} requests "
        f"({plan_description(summary.plan)})",
        f"{'tool':<26} {'turns':>7} {'share':>6} {'drawn':>6}",
    ]
    lines += [f"{t.tool:<26} {t.turns:>7,} {100 * t.share:>5.1f}% {t.sampled:>6}"
              + (f"  (short by {t.shortfall})" if t.shortfall else "") for t in summary.per_tool]
    drawn = sum(t.sampled for t in summary.per_tool)
    if drawn > summary.plan.size:
        lines.append(f"note: the floors ask for more than --size {summary.plan.size}: {drawn} drawn")
    if summary.unknown_tools:
        lines.append("WARNING: first tools in no catalogue (left out): "
                     + ", ".join(f"{t} ({n:,})" for t, n in summary.unknown_tools.items()))
    lines.append(f"weights:  {weights}")
    if not summary.queue_file:
        return lines + [f"queue:    none: every label of {summary.version} is decided"]
    lines += [f"queue:    {queue}  <- label it",
              f"          valid labels: {at / summary.queue_file.replace('.queue.jsonl', '.labels.csv')}",
              f"          for a spreadsheet: tooleval queue export {queue}",
              f"          then: tooleval queue import {queue}"]
    return lines
