"""Importing the adjudicated labelling queue: every decision checked, then a child version whose labels are
adjudicated and whose adjudications record who decided, when, why and the previous label."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli import main
from tasks.files.input_errors import InputError
from tasks.traffic.labelling_queue import CONFIRMED, import_queue
from tasks.taskset.load_taskset import content_hash, load_version
from tasks.taskset.validate_version import validate_version_file

WHO, WHEN = "support-ops:maria.keller", "2026-12-01T10:15:00Z"


def queue_lines(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / "queue" / "v2.queue.jsonl").read_text().splitlines()]


def write_queue(root: Path, lines: list[dict]) -> Path:
    path = root / "queue" / "v2.queue.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def decide_all(lines: list[dict], change_every: int = 5) -> list[dict]:
    """Confirm most hints; relabel every n-th request to 'none' (or search_kb when the hint was none)."""
    for n, line in enumerate(lines):
        line.update(decided_by=WHO, decided_at=WHEN, label=line["hint"])
        if n % change_every == 0:
            line["label"] = "search_kb" if line["hint"] == "none" else "none"
            line["reason"] = "read the whole conversation: production's first tool was wrong"
    return lines


def test_a_decided_queue_becomes_an_adjudicated_child_version(resampled):
    lines = decide_all(queue_lines(resampled))
    path = write_queue(resampled, lines)
    v2_hash = content_hash(resampled, "v2")
    result = import_queue(path)
    assert (result.from_version, result.version, result.reused) == ("v2", "v3", False)
    assert result.n_decided == len(lines) and result.n_still_provisional == 0
    assert result.n_changed == len([n for n in range(len(lines)) if n % 5 == 0])
    v3 = load_version(resampled, "v3")
    assert v3.manifest.parent == "v2" and v3.manifest.window == "2026-W44-W47"
    assert all(r.label_status == "adjudicated" for r in v3.requests)
    decided = {line["request_id"]: line for line in lines}
    assert all(r.expected == decided[r.id]["label"] for r in v3.requests)
    adjudications = {a.request_id: a for a in v3.adjudications}
    assert set(adjudications) == set(decided)
    for request_id, line in decided.items():
        record = adjudications[request_id]
        assert (record.previous_label, record.label, record.decided_by) == (line["hint"], line["label"], WHO)
        assert record.decided_at.isoformat().startswith("2026-12-01T10:15")
        assert record.reason == (line.get("reason") or CONFIRMED)
    assert content_hash(resampled, "v2") == v2_hash  # the provisional version is never edited
    assert validate_version_file(resampled / "v3.jsonl", weights_window="2026-W44-W47").startswith("OK")
    again = import_queue(path)
    assert again.version == "v3" and again.reused and not (resampled / "v4.jsonl").exists()


def test_every_bad_decision_is_named_and_nothing_is_written(resampled):
    lines = decide_all(queue_lines(resampled))
    lines[0]["label"] = "refund_ordr"
    lines[1]["label"] = "none" if lines[1]["hint"] != "none" else "search_kb"
    lines[1].pop("reason", None)
    lines[2].pop("decided_by")
    lines[3].update(label=None)
    before = sorted(p.name for p in resampled.iterdir())
    with pytest.raises(InputError) as caught:
        import_queue(write_queue(resampled, lines))
    found = {(p.rule, p.where.split(" (")[0]) for p in caught.value.problems}
    assert {("label-offered", "line 1"), ("reason-given", "line 2"), ("decision-complete", "line 3"),
            ("decision-complete", "line 4"), ("queue-decided", "line 4")} <= found
    assert all(p.file.endswith("queue/v2.queue.jsonl") for p in caught.value.problems)
    assert sorted(p.name for p in resampled.iterdir()) == before


def test_partial_import_keeps_the_undecided_provisional(resampled):
    lines = queue_lines(resampled)
    decide_all(lines[:10])
    path = write_queue(resampled, lines)
    with pytest.raises(InputError) as caught:
        import_queue(path)
    assert {p.rule for p in caught.value.problems} == {"queue-decided"}
    assert main(["queue", "import", str(path), "--partial"]) == 0
    v3 = load_version(resampled, "v3")
    statuses = {r.id: r.label_status for r in v3.requests}
    assert sum(s == "adjudicated" for s in statuses.values()) == 10
    assert sum(s == "provisional" for s in statuses.values()) == len(lines) - 10
