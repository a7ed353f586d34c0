"""The importers on the real public files in the sibling folder shared/bench (read-only)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.importers.bfcl import import_bfcl
from tasks.importers.metatool import import_metatool
from tasks.taskset.load_taskset import load_catalogue, load_version

BENCH = Path(__file__).resolve().parents[2].parent / "shared" / "bench"

pytestmark = pytest.mark.skipif(
    not BENCH.is_dir(), reason=f"public bench data not found at {BENCH} (the repo's sibling folder shared/bench)"
)


def test_bfcl_multiple(tmp_path):
    questions = BENCH / "bfcl" / "BFCL_v4_multiple.json"
    answers = BENCH / "bfcl" / "possible_answer" / "BFCL_v4_multiple.json"
    out = tmp_path / "bfcl-multiple"
    summary = import_bfcl(questions, answers, out)

    assert summary.n_requests == 200 and summary.n_dropped == 0
    loaded = load_version(out, "v1")
    assert loaded.manifest.content_hash == loaded.actual_hash
    assert loaded.manifest.n_requests == len(loaded.requests) == 200
    assert {r.slice for r in loaded.requests} == {"multiple"}
    for request in loaded.requests:
        names = [tool.name for tool in request.tools]
        assert 2 <= len(names) <= 4 and len(set(names)) == len(names)
        assert request.expected in names
    # labels agree with the source, record by record
    truth = {json.loads(l)["id"]: next(iter(json.loads(l)["ground_truth"][0])) for l in answers.open()}
    assert {r.id: r.expected for r in loaded.requests} == truth
    # BFCL's Python-style types are gone everywhere
    text = (out / "v1.jsonl").read_text()
    for bfcl_type in ('"dict"', '"float"', '"tuple"', '"any"'):
        assert f'"type": {bfcl_type}' not in text
    assert any("." in r.expected for r in loaded.requests)


def test_metatool_dev10(tmp_path):
    plugins = BENCH / "metatool" / "plugin_des.json"
    queries = BENCH / "metatool" / "all_clean_data.dev10.csv"
    out = tmp_path / "metatool"
    summary = import_metatool(plugins, queries, out)

    n_rows = sum(1 for _ in queries.open()) - 1
    assert n_rows == 2079
    assert summary.n_tools == 199
    assert summary.n_requests == n_rows - summary.n_dropped
    assert summary.n_dropped < 50  # a few duplicates and conflicts, not a broken read
    catalogue = load_catalogue(out, "metatool")
    assert len(catalogue.tools) == 199
    loaded = load_version(out, "v1")
    assert loaded.manifest.content_hash == loaded.actual_hash
    assert len(loaded.requests) == summary.n_requests
    assert {r.expected for r in loaded.requests} <= set(catalogue.names)
    assert len({r.id for r in loaded.requests}) == len(loaded.requests)
