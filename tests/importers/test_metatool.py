"""MetaTool importer on small hand-written fixtures: catalogue, ids, and the data-quality drops."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from schemas.selection.experiment import SelectionExperimentFile
from tasks.files.input_errors import InputError
from tasks.importers.metatool import import_metatool
from tasks.taskset.load_taskset import load_catalogue, load_version

FIXTURES = Path(__file__).parent / "fixtures" / "metatool"
PLUGINS = FIXTURES / "plugin_des.json"
QUERIES = FIXTURES / "queries.csv"


@pytest.fixture
def imported(tmp_path):
    out = tmp_path / "metatool"
    return out, import_metatool(PLUGINS, QUERIES, out)


def test_shared_catalogue_has_every_plugin_with_empty_parameters(imported):
    out, summary = imported
    catalogue = load_catalogue(out, "metatool")
    assert catalogue.names == ("WeatherTool", "FinanceTool", "GifApi", "NewsTool")
    assert all(t.parameters == {"type": "object", "properties": {}} for t in catalogue.tools)
    assert summary.n_tools == 4


def test_kept_requests_keep_their_csv_row_as_id(imported):
    out, summary = imported
    loaded = load_version(out, "v1")
    assert [(r.id, r.expected) for r in loaded.requests] == [
        ("mt-00001", "WeatherTool"),
        ("mt-00002", "FinanceTool"),
        ("mt-00003", "GifApi"),
        ("mt-00004", "NewsTool"),
        ("mt-00006", "WeatherTool"),
        ("mt-00011", "NewsTool"),
    ]
    assert loaded.requests[3].text == "Find news about elections, please."
    assert {r.slice for r in loaded.requests} == {"toole-single"}
    assert all(r.tools is None for r in loaded.requests)
    assert summary.n_requests == 6
    assert loaded.manifest.content_hash == loaded.actual_hash


def test_duplicates_are_kept_once_comparing_case_and_whitespace(imported):
    _, summary = imported
    assert summary.dropped["duplicate"] == 2
    assert "duplicate: row 5 repeats row 2 (FinanceTool), the first is kept" in summary.dropped_rows
    assert "duplicate: row 12 repeats row 3 (GifApi), the first is kept" in summary.dropped_rows


def test_a_query_with_two_tools_is_dropped_entirely(imported):
    out, summary = imported
    assert summary.dropped["label_conflict"] == 3
    (conflict,) = [d for d in summary.dropped_rows if d.startswith("label_conflict")]
    assert "What happened in the markets today?" in conflict
    assert "FinanceTool (rows 7, 9)" in conflict and "NewsTool (row 8)" in conflict
    assert not any("markets" in r.text for r in load_version(out, "v1").requests)


def test_unknown_tool_is_dropped_and_listed(imported):
    _, summary = imported
    assert summary.dropped["unknown_tool"] == 1
    assert any("'MusicTool'" in d and "row 10" in d for d in summary.dropped_rows)


def test_drops_are_reported_in_the_manifest_notes_and_the_summary_lines(imported):
    out, summary = imported
    notes = load_version(out, "v1").manifest.notes
    assert "plugin_des.json" in notes and "queries.csv" in notes
    assert "duplicate 2" in notes and "label_conflict 3" in notes and "unknown_tool 1" in notes
    assert "MusicTool" in notes and "markets" in notes
    text = "\n".join(summary.lines())
    assert "requests: 6" in text and "dropped 6 source rows" in text
    assert "assistant's reply: row 11" in text


def test_conflict_counts_an_unknown_tool_as_a_second_label(tmp_path):
    csv = tmp_path / "q.csv"
    csv.write_text("Query,Tool\nHow is the weather?,WeatherTool\nHow is the weather?,WeathrTool\nShow headlines,NewsTool\n")
    summary = import_metatool(PLUGINS, csv, tmp_path / "out")
    assert summary.dropped == {"empty": 0, "unknown_tool": 1, "label_conflict": 1, "duplicate": 0}
    assert [r.id for r in load_version(tmp_path / "out", "v1").requests] == ["mt-00003"]


def test_writes_a_valid_offline_experiment(imported):
    out, _ = imported
    path = out / "experiments" / "offline.yaml"
    experiment = SelectionExperimentFile.model_validate(yaml.safe_load(path.read_text()))
    assert (path.parent / experiment.taskset).resolve() == out.resolve()
    assert experiment.defaults.catalogue == "metatool"
    assert [a.selector for a in experiment.arms] == ["lexical", "embedding"]  # runs with nothing trained
    trained = SelectionExperimentFile.model_validate(yaml.safe_load((path.parent / "offline-trained.yaml").read_text()))
    assert [a.selector for a in trained.arms] == ["lexical", "embedding", "trained"]
    assert trained.arms[2].options == {"model_file": "../models/hybrid.json"}
    assert (out / "prompts" / "default.md").is_file()


def test_the_experiment_resolves_straight_after_the_import(imported):
    from tasks.experiment.resolve_experiment import resolve_experiment

    out, _ = imported
    assert [arm.name for arm in resolve_experiment(out / "experiments" / "offline.yaml").arms] == ["lexical", "embedding"]


def test_refuses_a_folder_with_a_frozen_v1(imported):
    out, _ = imported
    with pytest.raises(InputError) as caught:
        import_metatool(PLUGINS, QUERIES, out)
    assert caught.value.problems[0].rule == "version-immutable"


def test_wrong_header_is_an_input_error(tmp_path):
    csv = tmp_path / "q.csv"
    csv.write_text("query;tool\nx;y\n")
    with pytest.raises(InputError) as caught:
        import_metatool(PLUGINS, csv, tmp_path / "out")
    (problem,) = caught.value.problems
    assert (problem.file, problem.where, problem.rule) == (str(csv), "line 1", "csv-header")
    assert not (tmp_path / "out").exists()


def test_a_tool_named_none_is_refused(tmp_path):
    plugins = tmp_path / "plugin_des.json"
    plugins.write_text('{"none": "does nothing", "WeatherTool": "weather"}')
    with pytest.raises(InputError) as caught:
        import_metatool(plugins, QUERIES, tmp_path / "out")
    assert caught.value.problems[0].where == "tool 'none'"


def test_experiments_are_named_and_described_after_the_files_given(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    queries = src / "support_requests.csv"
    queries.write_bytes(QUERIES.read_bytes())
    out = tmp_path / "out"
    import_metatool(PLUGINS, queries, out)
    for file_name in ("offline.yaml", "offline-trained.yaml"):
        experiment = yaml.safe_load((out / "experiments" / file_name).read_text())
        assert "support-requests" in experiment["name"] and "metatool" not in experiment["name"].lower()
        assert "support_requests.csv" in experiment["description"] and PLUGINS.name in experiment["description"]
        assert "4-tool" in experiment["description"]
