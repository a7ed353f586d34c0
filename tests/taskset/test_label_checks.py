"""Each label rule: a bad task set gets an error naming the file, the line or id, and the rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.files.input_errors import InputError
from tasks.taskset.load_taskset import freeze_version
from tasks.taskset.validate_version import validate_version_file
from tests.factories import SUPPORT
from tests.factories.taskset import REQUESTS, write_taskset


def problems_of(path: Path, **kwargs) -> list:
    with pytest.raises(InputError) as caught:
        validate_version_file(path / "v1.jsonl", weights_window="w1", **kwargs)
    return caught.value.problems


def test_a_clean_set_passes(tmp_path):
    root = write_taskset(tmp_path / "ok")
    summary = validate_version_file(root / "v1.jsonl", weights_window="w1")
    assert summary.startswith("OK") and "5 requests" in summary and "4 weights" in summary


def test_label_not_offered_names_line_id_and_rule(tmp_path):
    requests = [dict(r) for r in REQUESTS]
    requests[2] = {**requests[2], "expected": "reset_pasword"}
    problems = problems_of(write_taskset(tmp_path / "t", requests=requests))
    assert [(p.rule, p.where) for p in problems] == [("label-offered", "line 3 (id r3)")]
    assert problems[0].file.endswith("v1.jsonl") and "reset_pasword" in str(problems[0])


def test_duplicate_ids_empty_text_and_undeclared_slice(tmp_path):
    requests = [dict(r) for r in REQUESTS]
    requests[1] = {**requests[1], "id": "r1"}
    requests[3] = {**requests[3], "messages": [{"role": "user", "content": "   "}]}
    requests[4] = {**requests[4], "slice": "brand_new"}
    rules = {(p.rule, p.where) for p in problems_of(write_taskset(tmp_path / "t", requests=requests))}
    assert ("ids-unique", "line 1 (id r1)") in rules and ("ids-unique", "line 2 (id r1)") in rules
    assert ("request-non-empty", "line 4 (id r4)") in rules
    assert ("slice-declared", "line 5 (id r5)") in rules


def test_one_text_with_two_labels(tmp_path):
    requests = [dict(r) for r in REQUESTS] + [
        {"id": "r6", "messages": [{"role": "user", "content": "Where is my parcel?  When will the delivery ARRIVE"}],
         "expected": "refund_order", "slice": "existing"}]
    problems = problems_of(write_taskset(tmp_path / "t", requests=requests))
    assert {(p.rule, p.where) for p in problems} == {("one-label-per-text", "line 2 (id r2)"),
                                                     ("one-label-per-text", "line 6 (id r6)")}


def test_one_text_is_compared_with_the_tools_offered_with_it(tmp_path):
    """BFCL live_multiple: the same words rightly expect a different tool when other tools are offered."""
    def tool(name):
        return {"name": name, "description": f"{name} tool", "parameters": {"type": "object", "properties": {}}}

    def own(i, expected, names):
        return {"id": f"b{i}", "messages": [{"role": "user", "content": "what is the contact of adriel"}],
                "expected": expected, "slice": "existing", "tools": [tool(n) for n in names]}

    base = [dict(r) for r in REQUESTS]
    fine = base + [own(1, "adriel_contact", ["adriel_contact", "weather"]), own(2, "contact", ["contact", "weather"]),
                   own(3, "none", [])]
    summary = validate_version_file(write_taskset(tmp_path / "ok", requests=fine) / "v1.jsonl", weights_window="w1")
    assert summary.startswith("OK")
    clash = base + [own(1, "adriel_contact", ["adriel_contact", "contact"]), own(2, "contact", ["contact", "adriel_contact"])]
    problems = problems_of(write_taskset(tmp_path / "bad", requests=clash))
    assert {(p.rule, p.where) for p in problems} == {("one-label-per-text", "line 6 (id b1)"),
                                                     ("one-label-per-text", "line 7 (id b2)")}


def test_relabel_needs_an_adjudication(tmp_path):
    requests = [dict(r) for r in REQUESTS]
    requests[0] = {**requests[0], "expected": "search_kb", "fallback": "refund_order"}
    problems = problems_of(write_taskset(tmp_path / "t", requests=requests))
    assert [(p.rule, p.where) for p in problems] == [("relabel-adjudicated", "line 1 (id r1)")]

    adjudication = {"request_id": "r1", "previous_label": "refund_order", "label": "search_kb",
                    "reason": "test", "decided_by": "qa", "decided_at": "2026-10-01T10:00:00Z"}
    root = write_taskset(tmp_path / "u", requests=requests, adjudications=[adjudication])
    assert validate_version_file(root / "v1.jsonl", weights_window="w1").startswith("OK")


def test_label_changed_against_parent_version_needs_an_adjudication(tmp_path):
    root = write_taskset(tmp_path / "t")
    changed = [dict(r) for r in REQUESTS]
    changed[3] = {**changed[3], "expected": "none"}
    (root / "v2.jsonl").write_text("\n".join(json.dumps(r) for r in changed) + "\n")

    freeze_version(root, "v2", ["existing"], parent="v1")
    with pytest.raises(InputError) as caught:
        validate_version_file(root / "v2.jsonl")
    assert [(p.rule, p.where) for p in caught.value.problems] == [("relabel-adjudicated", "line 4 (id r4)")]


def test_edited_version_no_longer_matches_its_manifest(tmp_path):
    root = write_taskset(tmp_path / "t")
    with (root / "v1.jsonl").open("a") as handle:
        handle.write(json.dumps({"id": "r9", "messages": [{"role": "user", "content": "sneaked in"}],
                                 "expected": "none", "slice": "existing"}) + "\n")
    problems = problems_of(root)
    assert [p.rule for p in problems] == ["manifest-hash"]
    assert problems[0].file.endswith("v1.manifest.json")


@pytest.mark.parametrize("weights, rule, where", [
    ({"refund_order": 1.2, "track_shipment": -0.2}, "weights-non-negative", "tool track_shipment"),
    ({"refund_order": 0.9, "gift_cards": 0.1}, "weights-in-catalogue", "tool gift_cards"),
    ({"refund_order": 0.5, "track_shipment": 0.3}, "weights-sum-to-one", ""),
])
def test_weights_rules(tmp_path, weights, rule, where):
    problems = problems_of(write_taskset(tmp_path / "t", weights=weights))
    assert [(p.rule, p.where) for p in problems] == [(rule, where)]
    assert problems[0].file.endswith("w1.json")


def test_schema_error_names_the_line(tmp_path):
    root = write_taskset(tmp_path / "t")
    lines = (root / "v1.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"slice"', '"slise"')
    (root / "v1.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as caught:
        validate_version_file(root / "v1.jsonl")
    assert caught.value.problems[0].where == "line 2" and caught.value.problems[0].rule == "schema"


def test_the_bundled_support_set_passes():
    summary = validate_version_file(SUPPORT / "v1.jsonl", weights_window="2026-W36-W47")
    assert "540 requests" in summary and "30 weights" in summary
