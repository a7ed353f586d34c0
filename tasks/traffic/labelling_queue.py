"""The labelling queue of a provisional version, and its import as a new adjudicated version.

``queue/<version>.queue.jsonl`` (one ``QueueItem`` a line, doubtful hints first) is what people label:
they fill ``label``, ``decided_by``, ``decided_at`` and, when the label differs from the hint, ``reason``.
``import_queue`` checks every line, then publishes a child version (parent = the provisional one) whose
decided labels are adjudicated, with one ``Adjudication`` per decision recording who decided, when, why and
the previous (provisional) label. The provisional version itself is never edited.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from schemas.catalogue import NONE_LABEL
from schemas.labelling import QueueImport, QueueItem
from schemas.taskset import Adjudication, LabelledRequest
from tasks.files.atomic_write import write_exclusive
from tasks.files.input_errors import InputError, Problem
from tasks.files.json_lines import jsonl_bytes
from tasks.taskset.load_taskset import load_version, read_jsonl_models
from tasks.traffic.publish_version import VersionDraft, all_catalogues, check_draft, publish
from tasks.traffic.stratified_sample import Candidate

CONFIRMED = "confirmed the production hint"


def queue_path(taskset_dir: Path, version: str) -> Path:
    return Path(taskset_dir) / "queue" / f"{version}.queue.jsonl"


def queue_items(taskset: str, version: str, requests: list[LabelledRequest], drawn: dict[str, Candidate]) -> list[QueueItem]:
    """One item per request (keyed by request id in ``drawn``), doubtful hints first, then by hint and id."""
    items = []
    for request in requests:
        candidate = drawn[request.id]
        turn = candidate.turn
        items.append(QueueItem(
            request_id=request.id, taskset=taskset, version=version, messages=request.messages, hint=request.expected,
            hint_counts=candidate.hint_counts, occurrences=candidate.occurrences, slice=request.slice,
            turn_id=turn.turn_id, turn_time=turn.time, user_retried=turn.user_retried,
            handed_to_human=turn.handed_to_human, empty_reply=turn.empty_reply, review_first=candidate.review_first,
        ))
    return sorted(items, key=lambda i: (not i.review_first, i.hint, i.request_id))


def write_queue(path: Path, items: list[QueueItem]) -> bool:
    """Create the queue file; an existing one (being labelled) is left alone. Returns whether it was written."""
    return write_exclusive(path, jsonl_bytes(items))


def _taskset_dir_of(path: Path, taskset_dir: Path | None) -> Path:
    if taskset_dir is not None:
        return Path(taskset_dir)
    if path.parent.name == "queue":
        return path.parent.parent
    raise InputError.one(str(path), "", "taskset-dir",
                         "the queue file is not in <taskset>/queue/: say which task set it belongs to with --taskset")


def import_queue(path: Path, taskset_dir: Path | None = None, partial: bool = False) -> QueueImport:
    """Check the decided queue and publish the adjudicated version; raises InputError naming each bad line."""
    path = Path(path)
    items = read_jsonl_models(path, QueueItem)
    file = str(path)
    if not items:
        raise InputError.one(file, "", "queue-non-empty", "the queue has no items")
    taskset_dir = _taskset_dir_of(path, taskset_dir)
    versions = sorted({i.version for i in items})
    if len(versions) > 1:
        raise InputError.one(file, "", "queue-one-version", f"items of several versions: {', '.join(versions)}")
    source = load_version(taskset_dir, versions[0])
    by_request = {r.id: r for r in source.requests}
    tools = {name for catalogue in all_catalogues(taskset_dir) for name in catalogue.names} | {NONE_LABEL}

    problems: list[Problem] = []
    decided: dict[str, QueueItem] = {}
    undecided: list[str] = []
    counts = Counter(i.request_id for i in items)
    for line, item in enumerate(items, start=1):
        where = f"line {line} (id {item.request_id})"
        if item.request_id not in by_request:
            problems.append(Problem(file, where, "queue-request-exists", f"no such request in {source.version}"))
            continue
        if counts[item.request_id] > 1:
            problems.append(Problem(file, where, "queue-ids-unique", "the request is in the queue more than once"))
            continue
        if item.label is None:
            if item.decided_by or item.decided_at or item.reason:
                problems.append(Problem(file, where, "decision-complete", "a decision without a label"))
            undecided.append(item.request_id)
            continue
        if item.label not in tools:
            problems.append(Problem(file, where, "label-offered",
                                    f"'{item.label}' is neither 'none' nor a tool of the task set's catalogues"))
        if not item.decided_by or item.decided_at is None:
            problems.append(Problem(file, where, "decision-complete", "a decided label needs decided_by and decided_at"))
        if item.label != by_request[item.request_id].expected and not (item.reason or "").strip():
            problems.append(Problem(file, where, "reason-given",
                                    f"the label changes {by_request[item.request_id].expected} -> {item.label}: say why"))
        decided[item.request_id] = item
    missing = [rid for rid in by_request if rid not in counts]
    if (undecided or missing) and not partial:
        lines = {i.request_id: n for n, i in enumerate(items, start=1)}
        problems += [Problem(file, f"line {lines[rid]} (id {rid})", "queue-decided",
                             "undecided; decide it, or import with --partial to keep it provisional") for rid in undecided]
        problems += [Problem(file, f"id {rid}", "queue-decided", f"a request of {source.version} missing from the queue")
                     for rid in missing]
    if problems:
        raise InputError(problems)
    if not decided:
        raise InputError.one(file, "", "queue-decided", "nothing is decided yet")

    requests, adjudications = [], []
    for request in source.requests:
        item = decided.get(request.id)
        if item is None:
            requests.append(request)
            continue
        requests.append(request.model_copy(update={"expected": item.label, "label_status": "adjudicated"}))
        adjudications.append(Adjudication(
            request_id=request.id, previous_label=request.expected, label=item.label,
            reason=(item.reason or "").strip() or CONFIRMED, decided_by=item.decided_by, decided_at=item.decided_at))
    adjudications.sort(key=lambda a: a.request_id)
    n_changed = sum(a.label != a.previous_label for a in adjudications)
    people = sorted({a.decided_by for a in adjudications})
    draft = VersionDraft(
        taskset_dir=taskset_dir, requests=tuple(requests), adjudications=tuple(source.adjudications) + tuple(adjudications),
        slices=list(source.manifest.slices), parent=source.version, window=source.manifest.window,
        sampling_seed=source.manifest.sampling_seed,
        notes=(f"Adjudicated from {path.name}: {len(adjudications)} of {len(requests)} labels decided by "
               f"{', '.join(people)} ({n_changed} changed from production's hint)"
               + (f"; {len(requests) - len(adjudications)} still provisional" if len(adjudications) < len(requests) else "")
               + f". Parent {source.version} keeps the provisional labels."),
    )
    check_draft(draft)
    manifest, reused = publish(draft)
    return QueueImport(queue_file=file, taskset=source.taskset, from_version=source.version, version=manifest.version,
                       reused=reused, n_decided=len(adjudications), n_changed=n_changed,
                       n_still_provisional=len(requests) - len(adjudications))
