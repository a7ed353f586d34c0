"""The labelling queue of a provisional version, and its import as a new adjudicated version.

``queue/<version>.queue.jsonl`` (one ``QueueItem`` a line, doubtful hints first) is what people label: each
line carries the empty decision keys ``label``, ``decided_by``, ``decided_at`` and ``reason`` to fill in,
and points at ``queue/<version>.labels.csv``, the valid labels (every tool of the task set's catalogues with
its description, and 'none'). ``export_csv`` writes the same queue as CSV for a spreadsheet; ``import_queue``
reads either form, checks every decision (a label that is not valid gets the nearest valid name as a hint; a
``decided_at`` without a time zone is refused) and publishes a child version whose decided labels are
adjudicated, with one ``Adjudication`` per decision recording who decided, when, why and the previous label.

An older decision never undoes a later one: a decision on a request that already has a recorded decision
(an earlier import) made at the same time or later is refused, naming who decided what and when (an old
sheet imported again), unless it agrees. Problems are listed what is wrong first, then what is undecided.

Partial imports chain: a partial import writes the next version (the undecided requests stay provisional)
and a queue of what remains for it. Importing a queue whose version already has partial imports applies the
new decisions to the last of them (decisions already imported are recognised and skipped), so each partial
import is a child of the one before, never a sibling. The provisional version itself is never edited.
"""

from __future__ import annotations

import csv
import difflib
import io
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from schemas.catalogue import NONE_LABEL
from schemas.labelling import QueueImport, QueueItem
from schemas.taskset import Adjudication, LabelledRequest
from tasks.files.atomic_write import write_atomic, write_exclusive
from tasks.files.input_errors import InputError, Problem
from tasks.taskset.load_taskset import TaskSetVersion, iter_jsonl_models, load_version
from tasks.traffic.publish_version import VersionDraft, all_catalogues, check_draft, manifests, publish, version_number
from tasks.traffic.stratified_sample import Candidate

CONFIRMED = "confirmed the production hint"
DECISION_KEYS = ("label", "decided_by", "decided_at", "reason")
CSV_COLUMNS = ("request_id", "version", "review_first", "hint", "conversation", "slice", "occurrences",
               "hint_counts", "user_retried", "handed_to_human", "empty_reply", "turn_id", "turn_time",
               *DECISION_KEYS)
"""The spreadsheet's columns: only request_id, version and the decision columns are read back."""


def queue_path(taskset_dir: Path, version: str) -> Path:
    return Path(taskset_dir) / "queue" / f"{version}.queue.jsonl"


def labels_path(taskset_dir: Path, version: str) -> Path:
    return Path(taskset_dir) / "queue" / f"{version}.labels.csv"


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
            labels_file=f"queue/{version}.labels.csv",
        ))
    return sorted(items, key=lambda i: (not i.review_first, i.hint, i.request_id))


def queue_bytes(items: list[QueueItem]) -> bytes:
    """One item a line, every key present: the decision keys as null, ready to fill in."""
    return "".join(item.model_dump_json() + "\n" for item in items).encode()


def labels_csv(taskset_dir: Path) -> str:
    """The valid labels: each tool of the task set's catalogues (the catalogues offering it, its description),
    then 'none'."""
    offered: dict[str, list[str]] = {}
    described: dict[str, str] = {}
    for catalogue in all_catalogues(taskset_dir):
        for tool in catalogue.tools:
            offered.setdefault(tool.name, []).append(catalogue.name)
            described.setdefault(tool.name, tool.description)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["label", "catalogues", "description"])
    writer.writerows([name, " ".join(offered[name]), described[name]] for name in sorted(offered))
    writer.writerow([NONE_LABEL, "", "no tool: the agent should answer (or ask) without calling one"])
    return buffer.getvalue()


def write_queue(path: Path, items: list[QueueItem]) -> bool:
    """Create the queue file and its labels file; an existing queue (being labelled) is left alone. Returns
    whether the queue was written."""
    path = Path(path)
    taskset_dir = path.parent.parent
    if items:
        write_atomic(labels_path(taskset_dir, items[0].version), labels_csv(taskset_dir))
    return write_exclusive(path, queue_bytes(items))


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def export_csv(queue_file: Path, out: Path | None = None) -> Path:
    """The queue as CSV for a spreadsheet (UTF-8 with a byte-order mark, which spreadsheets need to read
    non-ASCII text): one row per item, the conversation as 'role: text' lines, the decision columns last.
    Default path: beside the queue, ``<version>.queue.csv``. Refuses to replace an existing file."""
    queue_file = Path(queue_file)
    items = [item for _, item in iter_jsonl_models(queue_file, QueueItem)]
    out = Path(out) if out is not None else queue_file.with_name(queue_file.name.replace(".jsonl", "") + ".csv")
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for item in items:
        conversation = "\n".join(f"{m.role}: {m.content}" for m in item.messages)
        counts = "; ".join(f"{tool}: {n}" for tool, n in sorted(item.hint_counts.items(), key=lambda kv: -kv[1]))
        writer.writerow([item.request_id, item.version, _text(item.review_first), item.hint, conversation, item.slice,
                         item.occurrences, counts, _text(item.user_retried), _text(item.handed_to_human),
                         _text(item.empty_reply), item.turn_id, _text(item.turn_time),
                         *(_text(getattr(item, key)) for key in DECISION_KEYS)])
    if not write_exclusive(out, "\ufeff" + buffer.getvalue()):
        raise InputError.one(str(out), "", "file-new", "exists already (it may hold decisions): move it away or "
                             "give --out")
    return out


@dataclass(frozen=True)
class Decision:
    """One line of a decided queue, wherever it came from (JSONL or CSV)."""

    where: str
    request_id: str
    version: str
    label: str | None
    decided_by: str | None
    decided_at: datetime | None
    reason: str | None
    bad_time: bool = False
    """decided_at could not be read (reported apart)."""


def _blank(value: str | None) -> str | None:
    return value.strip() if value and value.strip() else None


def read_decisions(path: Path) -> tuple[list[Decision], list[QueueItem], list[Problem]]:
    """The decisions of a queue file (.jsonl, or .csv from ``export_csv``), its items when JSONL, and the
    problems of its times (without a zone, or not ISO 8601), each naming its line. Lines that do not fit the
    schema raise InputError naming each."""
    problems: list[Problem] = []
    decisions: list[Decision] = []
    items: list[QueueItem] = []
    file = str(path)
    if path.suffix.lower() == ".csv":
        rows = _csv_rows(path)
        for number, row in rows:
            where = f"row {number} (id {row.get('request_id') or '?'})"
            decided_at, bad_time = None, False
            if text := _blank(row.get("decided_at")):
                try:
                    decided_at = datetime.fromisoformat(text.replace(" ", "T", 1) if "T" not in text else text)
                except ValueError:
                    problems.append(Problem(file, where, "decided-at-format",
                                            f"decided_at '{text}' is not an ISO 8601 time such as 2026-12-01T10:15:00Z"))
                    bad_time = True
            if not _blank(row.get("request_id")) or not _blank(row.get("version")):
                problems.append(Problem(file, where, "queue-columns", "request_id and version must not be empty"))
                continue
            decisions.append(Decision(where, row["request_id"].strip(), row["version"].strip(), _blank(row.get("label")),
                                      _blank(row.get("decided_by")), decided_at, _blank(row.get("reason")), bad_time))
    else:
        for line, item in iter_jsonl_models(path, QueueItem):
            items.append(item)
            decisions.append(Decision(f"line {line} (id {item.request_id})", item.request_id, item.version,
                                      _blank(item.label), _blank(item.decided_by), item.decided_at, item.reason))
    for decision in decisions:
        if decision.decided_at is not None and decision.decided_at.utcoffset() is None:
            problems.append(Problem(file, decision.where, "decided-at-zone",
                                    f"decided_at {decision.decided_at.isoformat()} has no time zone: write it with "
                                    "one, e.g. 2026-12-01T10:15:00Z (UTC) or 2026-12-01T11:15:00+01:00"))
    return decisions, items, problems


def _csv_rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    """(row number as a spreadsheet shows it, row) for each non-empty row; a conversation cell may hold line
    breaks, so rows, not lines of the file, are what a labeller can find."""
    if not path.is_file():
        raise InputError.one(str(path), "", "file-exists", "file not found")
    try:
        text = path.read_text(encoding="utf-8-sig")  # a spreadsheet's byte-order mark is fine here
    except UnicodeDecodeError:
        raise InputError.one(str(path), "", "utf8", "not UTF-8 text: save the sheet as 'CSV UTF-8'") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in ("request_id", "version", *DECISION_KEYS) if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError.one(str(path), "line 1", "queue-columns", f"columns missing: {', '.join(missing)} "
                             "(export the queue with `tooleval queue export` and keep its header)")
    rows = []
    for number, row in enumerate(reader, start=2):  # the sheet's row numbers: the header is row 1
        if any((v or "").strip() for v in row.values() if isinstance(v, str)):
            rows.append((number, row))
    return rows


def _taskset_dir_of(path: Path, taskset_dir: Path | None) -> Path:
    if taskset_dir is not None:
        return Path(taskset_dir)
    if path.parent.name == "queue":
        return path.parent.parent
    raise InputError.one(str(path), "", "taskset-dir",
                         "the queue file is not in <taskset>/queue/: say which task set it belongs to with --taskset")


def _extends(child: TaskSetVersion, parent: TaskSetVersion) -> bool:
    """``child`` was made from ``parent`` by a queue import: the same requests, the parent's adjudications first."""
    n = len(parent.adjudications)
    return ([r.id for r in child.requests] == [r.id for r in parent.requests]
            and tuple(child.adjudications[:n]) == tuple(parent.adjudications)
            and len(child.adjudications) > n)


def last_partial_import(taskset_dir: Path, version: str) -> TaskSetVersion:
    """The version the next decisions on ``version``'s queue apply to: ``version`` itself, or the last of the
    versions earlier imports of its queue made (each the child of the one before)."""
    current = load_version(taskset_dir, version)
    known = manifests(taskset_dir)
    while True:
        children = sorted((v for v, m in known.items() if m.parent == current.version), key=version_number, reverse=True)
        following = next((child for v in children if _extends(child := load_version(taskset_dir, v), current)), None)
        if following is None:
            return current
        current = following


def _label_problem(label: str, tools: set[str], file: str, where: str, labels_file: str) -> Problem:
    near = difflib.get_close_matches(label, sorted(tools), n=1, cutoff=0.6)
    hint = f"; did you mean '{near[0]}'?" if near else ""
    return Problem(file, where, "label-offered",
                   f"'{label}' is neither 'none' nor a tool of the task set's catalogues{hint} (valid labels: {labels_file})")


def _place(problem: Problem) -> tuple[int, str]:
    """Problems in file order: 'line 12 (...)' / 'row 12 (...)' by number, the rest after."""
    words = problem.where.split()
    return (int(words[1]) if len(words) > 1 and words[1].isdigit() else 1 << 30, problem.where)


def _utc(when: datetime) -> datetime:
    """A recorded time without a zone read as UTC."""
    return when if when.utcoffset() is not None else when.replace(tzinfo=timezone.utc)


def _not_after(decision: Decision, earlier: Adjudication) -> bool:
    """The decision was made no later than the one already recorded for its request (an older sheet)."""
    when = decision.decided_at
    if when is None or when.utcoffset() is None:
        return False  # refused apart (no time, or no zone)
    return when <= _utc(earlier.decided_at)


def _stale_problem(decision: Decision, earlier: Adjudication, version: str, file: str) -> Problem:
    """An older decision never overrides a later one silently: say whose later decision it would undo."""
    who = ("you" if earlier.decided_by == decision.decided_by else earlier.decided_by)
    return Problem(file, decision.where, "decision-newest",
                   f"'{decision.label}' (decided {decision.decided_at.isoformat()}) would undo the later decision "
                   f"'{earlier.label}' that {who} made at {earlier.decided_at.isoformat()}, already in {version}: "
                   "this sheet is older; clear this line's decision, or decide again with the current time as "
                   "decided_at and a reason")


UNDECIDED_SHOWN = 10
"""Undecided lines named one by one up to this many; more are one problem naming the first of them."""


def _undecided_problems(still: list[str], decisions: list[Decision], version: str, file: str) -> list[Problem]:
    where_of = {d.request_id: d.where for d in decisions}
    missing = [Problem(file, f"id {rid}", "queue-decided", f"a provisional request of {version} missing from the "
                       "queue") for rid in still if rid not in where_of]
    undecided = sorted((where_of[rid] for rid in still if rid in where_of),
                       key=lambda where: _place(Problem(file, where, "", "")))
    advice = "decide it, or import with --partial to keep it provisional"
    if len(undecided) <= UNDECIDED_SHOWN:
        return missing + [Problem(file, where, "queue-decided", f"undecided; {advice}") for where in undecided]
    shown = ", ".join(where.split(" (")[0] for where in undecided[:5])
    return missing + [Problem(file, "", "queue-decided",
                              f"{len(undecided)} requests undecided ({shown} and {len(undecided) - 5} more): decide "
                              "them, or import with --partial to keep them provisional")]


def import_queue(path: Path, taskset_dir: Path | None = None, partial: bool = False) -> QueueImport:
    """Check the decided queue (JSONL or CSV) and publish the adjudicated version; raises InputError naming
    each bad line."""
    path = Path(path)
    decisions, items, time_problems = read_decisions(path)
    file = str(path)
    if not decisions:
        raise InputError.one(file, "", "queue-non-empty", "the queue has no items")
    taskset_dir = _taskset_dir_of(path, taskset_dir)
    versions = sorted({d.version for d in decisions})
    if len(versions) > 1:
        raise InputError.one(file, "", "queue-one-version", f"items of several versions: {', '.join(versions)}")
    source = load_version(taskset_dir, versions[0])
    target = last_partial_import(taskset_dir, source.version)
    by_request = {r.id: r for r in target.requests}
    recorded: dict[str, Adjudication] = {}  # each request's latest recorded decision
    for adjudication in target.adjudications:
        latest = recorded.get(adjudication.request_id)
        if latest is None or _utc(adjudication.decided_at) >= _utc(latest.decided_at):
            recorded[adjudication.request_id] = adjudication
    tools = {name for catalogue in all_catalogues(taskset_dir) for name in catalogue.names} | {NONE_LABEL}
    labels_file = str(labels_path(taskset_dir, source.version).relative_to(taskset_dir))

    problems: list[Problem] = list(time_problems)
    decided: dict[str, Decision] = {}
    undecided: list[Decision] = []
    counts = Counter(d.request_id for d in decisions)
    for decision in decisions:
        where = decision.where
        if decision.request_id not in by_request:
            problems.append(Problem(file, where, "queue-request-exists", f"no such request in {source.version}"))
            continue
        if counts[decision.request_id] > 1:
            problems.append(Problem(file, where, "queue-ids-unique", "the request is in the queue more than once"))
            continue
        if decision.label is None:
            if decision.decided_by or decision.decided_at or decision.reason:
                problems.append(Problem(file, where, "decision-complete", "a decision without a label"))
            undecided.append(decision)
            continue
        earlier = recorded.get(decision.request_id)
        if earlier is not None and (earlier.label, earlier.decided_by, earlier.decided_at) == (
                decision.label, decision.decided_by, decision.decided_at):
            continue  # imported already (an earlier partial import of this queue)
        if earlier is not None and _not_after(decision, earlier):
            if decision.label == earlier.label:
                continue  # a later decision already says the same
            problems.append(_stale_problem(decision, earlier, target.version, file))
            continue
        if decision.label not in tools:
            problems.append(_label_problem(decision.label, tools, file, where, labels_file))
        if not decision.decided_by or (decision.decided_at is None and not decision.bad_time):
            problems.append(Problem(file, where, "decision-complete", "a decided label needs decided_by and decided_at"))
        current = by_request[decision.request_id].expected
        if decision.label != current and not (decision.reason or "").strip():
            problems.append(Problem(file, where, "reason-given", f"the label changes {current} -> {decision.label}: say why"))
        decided[decision.request_id] = decision
    still = [r.id for r in target.requests if r.label_status == "provisional" and r.id not in decided]
    if still and not partial:
        problems += _undecided_problems(still, decisions, target.version, file)
    if problems:
        # what is wrong first, in file order; then what is merely undecided (one line when there are many)
        raise InputError(sorted(problems, key=lambda p: (p.rule == "queue-decided", _place(p))))
    if not decided:
        if target.version != source.version:  # everything here was imported before
            return QueueImport(queue_file=file, taskset=target.taskset, from_version=target.manifest.parent or "",
                               version=target.version, reused=True, n_decided=0, n_changed=0,
                               n_still_provisional=len(still))
        raise InputError.one(file, "", "queue-decided", "nothing is decided yet")

    requests, adjudications = [], []
    for request in target.requests:
        decision = decided.get(request.id)
        if decision is None:
            requests.append(request)
            continue
        requests.append(request.model_copy(update={"expected": decision.label, "label_status": "adjudicated"}))
        adjudications.append(Adjudication(
            request_id=request.id, previous_label=request.expected, label=decision.label,
            reason=(decision.reason or "").strip() or CONFIRMED, decided_by=decision.decided_by,
            decided_at=decision.decided_at))
    adjudications.sort(key=lambda a: a.request_id)
    n_changed = sum(a.label != a.previous_label for a in adjudications)
    people = sorted({a.decided_by for a in adjudications})
    n_left = sum(r.label_status == "provisional" for r in requests)
    chain = f" (itself from {source.version}'s queue)" if target.version != source.version else ""
    draft = VersionDraft(
        taskset_dir=taskset_dir, requests=tuple(requests), adjudications=tuple(target.adjudications) + tuple(adjudications),
        slices=list(target.manifest.slices), parent=target.version, window=target.manifest.window,
        sampling_seed=target.manifest.sampling_seed,
        notes=(f"Adjudicated from {path.name}: {len(adjudications)} more of {len(requests)} labels decided by "
               f"{', '.join(people)} ({n_changed} changed from the label before)"
               + (f"; {n_left} still provisional" if n_left else "")
               + f". Parent {target.version}{chain} keeps its labels."),
    )
    check_draft(draft)
    manifest, reused = publish(draft)
    rest = None
    if n_left:
        rest = _write_rest_queue(taskset_dir, manifest.version, requests, items or _queue_items_of(taskset_dir, source.version),
                                 as_csv=path.suffix.lower() == ".csv")
    return QueueImport(queue_file=file, taskset=target.taskset, from_version=target.version, version=manifest.version,
                       reused=reused, n_decided=len(adjudications), n_changed=n_changed, n_still_provisional=n_left,
                       rest_queue=str(rest.relative_to(taskset_dir)) if rest else None)


def _queue_items_of(taskset_dir: Path, version: str) -> list[QueueItem]:
    path = queue_path(taskset_dir, version)
    return [item for _, item in iter_jsonl_models(path, QueueItem)] if path.is_file() else []


def _write_rest_queue(taskset_dir: Path, version: str, requests: list[LabelledRequest], items: list[QueueItem],
                      as_csv: bool) -> Path | None:
    """The queue of what remains provisional in ``version``: the original items of those requests, their
    decision keys empty (and as CSV too when the import was a CSV)."""
    left = {r.id for r in requests if r.label_status == "provisional"}
    rest = [item.model_copy(update={"version": version, "labels_file": f"queue/{version}.labels.csv",
                                    **dict.fromkeys(DECISION_KEYS)})
            for item in items if item.request_id in left]
    if not rest:
        return None
    path = queue_path(taskset_dir, version)
    write_queue(path, rest)
    if as_csv and not path.with_suffix(".csv").exists():
        return export_csv(path)
    return path
