"""Importing the adjudicated labelling queue: every decision checked, then a child version whose labels are
adjudicated and whose adjudications record who decided, when, why and the previous label."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from flows.cli import main
from tasks.files.input_errors import InputError
from tasks.traffic.labelling_queue import CONFIRMED, export_csv, import_queue
from tasks.traffic.resample_version import describe_resample, resample_version
from tests.factories import NOW
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


def test_queue_lines_carry_the_empty_decision_keys_and_point_at_the_valid_labels(resampled):
    raw = (resampled / "queue" / "v2.queue.jsonl").read_text().splitlines()
    first = json.loads(raw[0])
    assert {key: first[key] for key in ("label", "decided_by", "decided_at", "reason")} == dict.fromkeys(
        ("label", "decided_by", "decided_at", "reason"))
    assert all('"label":null' in line for line in raw)
    assert first["labels_file"] == "queue/v2.labels.csv"
    labels = list(csv.DictReader((resampled / first["labels_file"]).open()))
    names = [row["label"] for row in labels]
    assert "refund_order" in names and "redeem_gift_card" in names and names[-1] == "none"
    assert all(row["description"] for row in labels)


def test_an_invalid_label_gets_the_nearest_valid_name_and_a_zoneless_time_is_refused(resampled):
    lines = decide_all(queue_lines(resampled))
    lines[0]["label"] = "refund_ordr"
    lines[1]["decided_at"] = "2026-12-01T10:15:00"  # no zone
    with pytest.raises(InputError) as caught:
        import_queue(write_queue(resampled, lines))
    by_rule = {p.rule: p for p in caught.value.problems}
    assert "did you mean 'refund_order'?" in by_rule["label-offered"].message
    assert "queue/v2.labels.csv" in by_rule["label-offered"].message
    zone = by_rule["decided-at-zone"]
    assert zone.where.startswith("line 2 (id ") and zone.file.endswith("v2.queue.jsonl") and "time zone" in zone.message
    assert not (resampled / "v3.jsonl").exists()


def _fill_csv(path: Path, decide) -> None:
    """Fill the exported sheet the way a spreadsheet would save it (UTF-8 with a BOM)."""
    rows = list(csv.DictReader(path.open(encoding="utf-8-sig")))
    for n, row in enumerate(rows):
        decide(n, row)
    with path.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_a_queue_exported_as_csv_and_decided_in_a_spreadsheet_imports_like_jsonl(resampled):
    queue = resampled / "queue" / "v2.queue.jsonl"
    assert main(["queue", "export", str(queue)]) == 0
    sheet = resampled / "queue" / "v2.queue.csv"
    assert sheet.read_bytes().startswith(b"\xef\xbb\xbf")
    header = next(csv.reader(sheet.open(encoding="utf-8-sig")))
    assert header[-4:] == ["label", "decided_by", "decided_at", "reason"] and "conversation" in header

    def decide(n: int, row: dict) -> None:
        row.update(label=row["hint"], decided_by=WHO, decided_at=WHEN)
        if n == 0:
            row.update(label="none" if row["hint"] != "none" else "search_kb", reason="asked a question, no tool")
    _fill_csv(sheet, decide)
    result = import_queue(sheet)
    assert (result.version, result.n_decided, result.n_changed, result.n_still_provisional) == ("v3", len(
        queue_lines(resampled)), 1, 0)
    assert all(r.label_status == "adjudicated" for r in load_version(resampled, "v3").requests)


def test_a_csv_names_the_line_of_a_zoneless_or_unreadable_time(resampled):
    queue = resampled / "queue" / "v2.queue.jsonl"
    sheet = export_csv(queue, resampled / "sheet.csv")

    def decide(n: int, row: dict) -> None:
        row.update(label=row["hint"], decided_by=WHO, decided_at=WHEN)
        if n == 2:
            row["decided_at"] = "2026-12-01 10:15"
        if n == 4:
            row["decided_at"] = "1st December"
    _fill_csv(sheet, decide)
    with pytest.raises(InputError) as caught:
        import_queue(sheet, resampled)
    found = {(p.rule, p.where.split(" (")[0]) for p in caught.value.problems}
    assert found == {("decided-at-zone", "row 4"), ("decided-at-format", "row 6")}  # the sheet's rows: header = row 1


def test_partial_imports_chain_each_a_child_of_the_last_with_a_queue_for_the_rest(resampled):
    lines = queue_lines(resampled)
    total = len(lines)
    decide_all(lines[:10])
    v2_queue = write_queue(resampled, lines)
    first = import_queue(v2_queue, partial=True)
    assert (first.version, first.from_version, first.n_still_provisional) == ("v3", "v2", total - 10)
    assert first.rest_queue == "queue/v3.queue.jsonl"
    rest = [json.loads(line) for line in (resampled / first.rest_queue).read_text().splitlines()]
    assert len(rest) == total - 10 and {r["version"] for r in rest} == {"v3"}
    assert all(r["label"] is None and r["labels_file"] == "queue/v3.labels.csv" for r in rest)
    # the labeller goes on in v2's queue: ten more decisions -> a child of v3, not a second child of v2
    decide_all(lines[10:20])
    write_queue(resampled, lines)
    second = import_queue(v2_queue, partial=True)
    assert (second.version, second.from_version, second.n_decided, second.n_still_provisional) == (
        "v4", "v3", 10, total - 20)
    # and finishes in the queue of the rest, which imports as a child of v4
    rest_path = resampled / second.rest_queue
    rest = [json.loads(line) for line in rest_path.read_text().splitlines()]
    assert len(rest) == total - 20
    rest_path.write_text("".join(json.dumps(line) + "\n" for line in decide_all(rest)))
    last = import_queue(rest_path)
    assert (last.version, last.from_version, last.n_still_provisional, last.rest_queue) == ("v5", "v4", 0, None)
    parents = {v: load_version(resampled, v).manifest.parent for v in ("v3", "v4", "v5")}
    assert parents == {"v3": "v2", "v4": "v3", "v5": "v4"}
    v5 = load_version(resampled, "v5")
    assert all(r.label_status == "adjudicated" for r in v5.requests) and len(v5.adjudications) == total
    assert import_queue(v2_queue, partial=True).reused  # nothing new: already in the chain


def test_the_same_window_resampled_again_is_the_newest_version_its_queue_imports_made(resampled):
    """The weekly run after partial imports measures the labels people decided and points at what is left."""
    lines = queue_lines(resampled)
    decide_all(lines[:10])
    assert import_queue(write_queue(resampled, lines), partial=True).version == "v3"
    again = resample_version(resampled, now=NOW)
    assert (again.reused, again.drawn_as, again.version, again.queue_file) == (True, "v2", "v3", "queue/v3.queue.jsonl")
    said = "\n".join(describe_resample(again, resampled))
    assert "found an identical earlier draw: support v3" in said and "drawn as v2, labels imported since" in said
    assert f"tooleval queue import {resampled / 'queue' / 'v3.queue.jsonl'}" in said
    rest = resampled / "queue" / "v3.queue.jsonl"
    rest.write_text("".join(json.dumps(line) + "\n" for line in decide_all(
        [json.loads(line) for line in rest.read_text().splitlines()])))
    assert import_queue(rest).version == "v4"
    done = resample_version(resampled, now=NOW)
    assert (done.drawn_as, done.version, done.queue_file) == ("v2", "v4", "")
    assert "queue:    none: every label of v4 is decided" in describe_resample(done, resampled)


def test_an_old_sheet_imported_again_does_not_undo_a_later_decision_of_someone_else(resampled):
    """Version v4's lookup_article became search_kb again, silently, when an older sheet was
    imported after another labeller's later decision."""
    lines = queue_lines(resampled)
    decide_all(lines[:10], change_every=100)  # Maria confirms ten hints at 10:15
    old_sheet = json.loads(json.dumps(lines))
    v2_queue = write_queue(resampled, lines)
    assert import_queue(v2_queue, partial=True).version == "v3"
    other = "search_kb" if lines[0]["hint"] != "search_kb" else "none"
    lines[0].update(label=other, decided_by="support-ops:ben.ito", decided_at="2026-12-02T09:00:00Z",
                    reason="the customer asks for the article, not an action")
    write_queue(resampled, lines)
    assert import_queue(v2_queue, partial=True).version == "v4"  # Ben's later decision
    before = sorted(p.name for p in resampled.iterdir())
    write_queue(resampled, old_sheet)  # Maria's sheet of yesterday, imported again
    with pytest.raises(InputError) as caught:
        import_queue(v2_queue, partial=True)
    [problem] = caught.value.problems
    assert problem.rule == "decision-newest" and problem.where.startswith("line 1 ")
    assert "support-ops:ben.ito" in problem.message and other in problem.message and "v4" in problem.message
    assert sorted(p.name for p in resampled.iterdir()) == before
    labels = {r.id: r.expected for r in load_version(resampled, "v4").requests}
    assert labels[lines[0]["request_id"]] == other
    # the same sheet with that line cleared imports: nothing new, Ben's label stands
    old_sheet[0].update(label=None, decided_by=None, decided_at=None, reason=None)
    write_queue(resampled, old_sheet)
    assert import_queue(v2_queue, partial=True).reused
    # Maria deciding again, later than Ben, with a reason, is a decision like any other
    old_sheet[0].update(label=lines[0]["hint"], decided_by=WHO, decided_at="2026-12-02T11:00:00Z",
                        reason="asked the customer: they wanted the action")
    write_queue(resampled, old_sheet)
    assert import_queue(v2_queue, partial=True).version == "v5"


def test_real_problems_come_before_hundreds_of_undecided_lines(resampled, capsys):
    """Three real problems were buried among 570 'undecided' lines cut at 20."""
    lines = queue_lines(resampled)
    assert len(lines) > 30
    decide_all(lines[:3], change_every=100)
    lines[1]["label"] = "refund_ordr"
    lines[2].pop("decided_by")
    path = write_queue(resampled, lines)
    assert main(["queue", "import", str(path)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if ": [" in line]
    rules = [line.split(": [")[1].split("]")[0] for line in err]
    assert rules == ["label-offered", "reason-given", "decision-complete", "queue-decided"], err
    assert "line 2 " in err[0] and "line 3 " in err[2]
    assert f"{len(lines) - 3} requests undecided (line 4, line 5" in err[3] and "--partial" in err[3]
