"""The columnar request table: validated line by line, errors keep their line numbers, and a request built
on demand is the one its line holds."""

from __future__ import annotations

import json

import pytest

from schemas.taskset import LabelledRequest
from tasks.files.input_errors import InputError
from tasks.taskset.load_taskset import load_version, read_jsonl_models, read_request_table
from tasks.taskset.request_table import RequestRows, messages_json, request_table
from tests.factories import SUPPORT
from tests.factories.taskset import REQUESTS, write_taskset

OWN_TOOLS = [{"name": "get_weather", "description": "Weather now.",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


def test_bad_lines_are_reported_with_their_file_line_numbers(tmp_path):
    path = tmp_path / "v1.jsonl"
    lines = [json.dumps(REQUESTS[0]), "", json.dumps({**REQUESTS[1], "expected": 7}), json.dumps(REQUESTS[2]),
             json.dumps({**REQUESTS[3], "colour": "red"}), "{not json"]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as caught:
        read_request_table(path)
    problems = caught.value.problems
    assert [(p.where, p.rule) for p in problems] == [("line 3", "schema"), ("line 5", "schema"), ("line 6", "schema")]
    assert all(p.file == str(path) for p in problems)
    assert "expected" in problems[0].message and "colour" in problems[1].message


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(InputError) as caught:
        read_request_table(tmp_path / "v9.jsonl")
    assert [(p.rule, p.file) for p in caught.value.problems] == [("file-exists", str(tmp_path / "v9.jsonl"))]


def test_line_column_counts_blank_lines(tmp_path):
    path = tmp_path / "v1.jsonl"
    path.write_text(json.dumps(REQUESTS[0]) + "\n\n" + json.dumps(REQUESTS[1]) + "\n")
    assert read_request_table(path).get_column("line").to_list() == [1, 3]


def test_requests_built_on_demand_equal_the_file(tmp_path):
    requests = [dict(r) for r in REQUESTS]
    requests[0] = {**requests[0], "fallback": "search_kb", "intent": "refund.damaged"}
    requests[1] = {**requests[1], "label_status": "provisional",
                   "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                                {"role": "user", "content": "où est mon colis ? 📦"}]}
    requests[2] = {**requests[2], "tools": OWN_TOOLS, "expected": "get_weather"}
    path = tmp_path / "v1.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests))

    from_file = read_jsonl_models(path, LabelledRequest)
    rows = RequestRows(read_request_table(path))
    assert len(rows) == len(from_file) == 5
    assert list(rows) == from_file
    assert [rows[i] for i in range(len(rows))] == from_file and rows[-1] == from_file[-1]
    assert list(rows[1:3]) == from_file[1:3]
    assert rows[1].text == "où est mon colis ? 📦" and rows[2].tools == from_file[2].tools
    with pytest.raises(IndexError):
        rows[5]


def test_a_loaded_version_reads_as_its_requests():
    loaded = load_version(SUPPORT, "v1")
    from_file = read_jsonl_models(loaded.requests_path, LabelledRequest)
    assert isinstance(loaded.requests, RequestRows) and list(loaded.requests) == from_file
    table = loaded.table
    assert table.get_column("id").to_list() == [r.id for r in from_file]
    assert table.get_column("text").to_list() == [r.text for r in from_file]
    assert table.get_column("messages").to_list() == [messages_json(r.messages) for r in from_file]


def test_a_table_built_from_models_matches_the_loaded_one(tmp_path):
    root = write_taskset(tmp_path / "t")
    loaded = load_version(root, "v1")
    assert request_table(list(loaded.requests)).equals(loaded.table)
