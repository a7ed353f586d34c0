"""BFCL importer on small hand-written fixtures: conversion, labels, errors, immutability."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from schemas.selection.experiment import SelectionExperimentFile
from tasks.files.input_errors import InputError
from tasks.importers.bfcl import BfclSource, convert_parameters, import_bfcl, import_bfcl_slices
from tasks.taskset.load_taskset import load_prompt, load_version

FIXTURES = Path(__file__).parent / "fixtures" / "bfcl"
QUESTIONS = FIXTURES / "BFCL_v4_multiple.json"
ANSWERS = FIXTURES / "possible_answer" / "BFCL_v4_multiple.json"
IRRELEVANCE = FIXTURES / "BFCL_v4_live_irrelevance.json"


def copy_pair(tmp_path: Path) -> tuple[Path, Path]:
    """Editable copies of the fixture pair, laid out as BFCL lays them out."""
    src = tmp_path / "src"
    (src / "possible_answer").mkdir(parents=True)
    questions = Path(shutil.copy(QUESTIONS, src / QUESTIONS.name))
    answers = Path(shutil.copy(ANSWERS, src / "possible_answer" / ANSWERS.name))
    return questions, answers


def rewrite(path: Path, edit) -> None:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    path.write_text("".join(json.dumps(r) + "\n" for r in edit(records)))


def test_imports_requests_with_their_own_tools_and_labels(tmp_path):
    out = tmp_path / "bfcl-multiple"
    summary = import_bfcl(QUESTIONS, ANSWERS, out)

    loaded = load_version(out, "v1")
    assert [r.id for r in loaded.requests] == ["multiple_0", "multiple_1", "multiple_2"]
    assert [r.expected for r in loaded.requests] == ["cellbio.get_proteins", "math.hypot", "get_weather"]
    assert {r.slice for r in loaded.requests} == {"multiple"}
    assert loaded.manifest.slices == ["multiple"]
    for request in loaded.requests:
        assert request.expected in {tool.name for tool in request.tools}
    assert summary.n_requests == 3 and summary.n_tools == 3 and summary.n_dropped == 0
    assert loaded.manifest.content_hash == loaded.actual_hash == summary.content_hash


def test_function_names_keep_their_dots(tmp_path):
    import_bfcl(QUESTIONS, ANSWERS, tmp_path / "out")
    first = load_version(tmp_path / "out", "v1").requests[0]
    assert [tool.name for tool in first.tools] == ["cellbio.get_proteins", "math.hypot"]


def test_messages_are_the_first_turn_with_system_kept(tmp_path):
    import_bfcl(QUESTIONS, ANSWERS, tmp_path / "out")
    second = load_version(tmp_path / "out", "v1").requests[1]
    assert [m.role for m in second.messages] == ["system", "user"]
    assert second.text == "How long is the hypotenuse of a 3-4 right triangle?"


def test_python_style_types_become_json_schema(tmp_path):
    import_bfcl(QUESTIONS, ANSWERS, tmp_path / "out")
    tool = load_version(tmp_path / "out", "v1").requests[0].tools[0]
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "cell_compartment": {"type": "string", "description": "The compartment.", "enum": ["nucleus", "cytoplasm"]},
            "include_description": {"type": "boolean", "description": "Describe each protein.", "default": False},
            "coordinates": {"type": "array", "items": {"type": "number"}, "description": "Latitude and longitude."},
            "samples": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "weight": {"type": "number"},
                        "count": {"type": "integer"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["weight"],
                },
            },
            "payload": {"description": "Anything at all."},
            "limit": {"type": "integer", "default": 10},
        },
        "required": ["cell_compartment"],
    }


def test_conversion_of_type_lists_and_missing_parameters():
    dropped: Counter[str] = Counter()
    assert convert_parameters(None, "f", dropped) == {"type": "object", "properties": {}}
    converted = convert_parameters({"type": "dict", "properties": {"v": {"type": ["int", "str"]}, "w": {"type": ["float", "any"]}}}, "f", dropped)
    assert converted["properties"] == {"v": {"type": ["integer", "string"]}, "w": {}}


def test_irrelevance_file_with_label_none_expects_none(tmp_path):
    out = tmp_path / "irr"
    summary = import_bfcl(IRRELEVANCE, None, out, label_none=True)
    loaded = load_version(out, "v1")
    assert [r.expected for r in loaded.requests] == ["none", "none"]
    assert {r.slice for r in loaded.requests} == {"live_irrelevance"}
    assert loaded.manifest.counts_by_label == {"none": 2}
    assert summary.n_requests == 2
    assert "none" in loaded.manifest.notes


def test_answers_or_label_none_are_required_whatever_the_file_name(tmp_path):
    for questions in (QUESTIONS, IRRELEVANCE):  # an 'irrelevance' file name labels nothing
        with pytest.raises(InputError) as caught:
            import_bfcl(questions, None, tmp_path / "out")
        assert caught.value.problems[0].rule == "answers-required"
        assert str(questions) in str(caught.value) and "--label-none" in str(caught.value)
        assert not (tmp_path / "out").exists()


def test_answers_and_label_none_together_are_refused(tmp_path):
    with pytest.raises(InputError) as caught:
        import_bfcl(QUESTIONS, ANSWERS, tmp_path / "out", label_none=True)
    assert caught.value.problems[0].rule == "answers-or-label-none"


def test_answer_for_an_unknown_id_names_the_file_and_the_id(tmp_path):
    questions, answers = copy_pair(tmp_path)
    rewrite(answers, lambda rs: rs + [{"id": "multiple_99", "ground_truth": [{"math.hypot": {}}]}])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, tmp_path / "out")
    message = str(caught.value)
    assert str(answers) in message and "id multiple_99" in message and "answer-has-question" in message
    assert not (tmp_path / "out" / "v1.jsonl").exists()


def test_question_without_an_answer_names_the_file_and_the_id(tmp_path):
    questions, answers = copy_pair(tmp_path)
    rewrite(answers, lambda rs: [r for r in rs if r["id"] != "multiple_1"])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, tmp_path / "out")
    (problem,) = caught.value.problems
    assert (problem.file, problem.where, problem.rule) == (str(answers), "id multiple_1", "question-has-answer")
    assert questions.name in problem.message


def test_label_must_be_among_the_records_functions(tmp_path):
    questions, answers = copy_pair(tmp_path)
    rewrite(answers, lambda rs: [{**r, "ground_truth": [{"get_weather": {}}]} if r["id"] == "multiple_0" else r for r in rs])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, tmp_path / "out")
    (problem,) = caught.value.problems
    assert (problem.where, problem.rule) == ("id multiple_0", "label-offered")


def test_parallel_ground_truth_is_refused(tmp_path):
    questions, answers = copy_pair(tmp_path)
    two = [{"math.hypot": {}}, {"get_weather": {}}]
    rewrite(answers, lambda rs: [{**r, "ground_truth": two} if r["id"] == "multiple_2" else r for r in rs])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, tmp_path / "out")
    assert [(p.where, p.rule) for p in caught.value.problems] == [("id multiple_2", "single-call")]


def test_unknown_role_is_an_input_error(tmp_path):
    questions, answers = copy_pair(tmp_path)
    rewrite(questions, lambda rs: [{**r, "question": [[{"role": "tool", "content": "42"}]]} if r["id"] == "multiple_2" else r for r in rs])
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, tmp_path / "out")
    (problem,) = caught.value.problems
    assert (problem.file, problem.where) == (str(questions), "id multiple_2")
    assert "'tool'" in problem.message


def test_unknown_parameter_type_names_the_parameter(tmp_path):
    questions, answers = copy_pair(tmp_path)

    def edit(records):
        records[2]["function"][0]["parameters"]["properties"]["city"]["type"] = "complex"
        return records

    rewrite(questions, edit)
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, tmp_path / "out")
    (problem,) = caught.value.problems
    assert problem.where == "id multiple_2" and "get_weather.city" in problem.message and "'complex'" in problem.message


def test_bad_json_line_is_reported_with_its_number(tmp_path):
    questions, answers = copy_pair(tmp_path)
    questions.write_text(questions.read_text() + "{not json\n")
    with pytest.raises(InputError) as caught:
        import_bfcl(questions, answers, tmp_path / "out")
    assert [(p.where, p.rule) for p in caught.value.problems] == [("line 4", "json-lines")]


def test_refuses_a_folder_with_a_frozen_v1(tmp_path):
    out = tmp_path / "out"
    import_bfcl(QUESTIONS, ANSWERS, out)
    before = (out / "v1.jsonl").read_bytes()
    with pytest.raises(InputError) as caught:
        import_bfcl(IRRELEVANCE, None, out, label_none=True)
    assert caught.value.problems[0].rule == "version-immutable"
    assert str(out / "v1.manifest.json") in str(caught.value)
    assert (out / "v1.jsonl").read_bytes() == before


def test_writes_a_valid_offline_experiment_and_prompt(tmp_path):
    out = tmp_path / "out"
    import_bfcl(QUESTIONS, ANSWERS, out)
    plain = ("lexical", "bm25-okapi"), ("embedding", "sentence-transformers/all-MiniLM-L6-v2")
    for file_name, arms, comparisons in [
        ("offline.yaml", {*plain}, [("lexical", "embedding", ["model"])]),
        ("offline-trained.yaml", {*plain, ("trained", "tooleval-hybrid")},
         [("lexical", "embedding", ["model"]), ("embedding", "trained", ["model"])]),
    ]:
        path = out / "experiments" / file_name
        experiment = SelectionExperimentFile.model_validate(yaml.safe_load(path.read_text()))
        assert (path.parent / experiment.taskset).resolve() == out.resolve()
        assert experiment.version == "v1" and len(experiment.seeds) >= 3
        assert experiment.defaults.catalogue == "per_request" and experiment.defaults.prompt == "default"
        assert {(a.selector, a.model) for a in experiment.arms} == arms
        assert [(c.baseline, c.arm, c.declare) for c in experiment.comparisons] == comparisons
    assert "none" in load_prompt(out, "default").lower()


def test_summary_and_notes_name_the_sources(tmp_path):
    summary = import_bfcl(QUESTIONS, ANSWERS, tmp_path / "out")
    notes = load_version(tmp_path / "out", "v1").manifest.notes
    assert QUESTIONS.name in notes and "possible_answer/" in notes
    assert "optional (1)" in notes  # BFCL's own keyword, not JSON schema
    text = "\n".join(summary.lines())
    assert "requests: 3" in text and "dropped: nothing" in text
    assert f"next: tooleval run {tmp_path / 'out' / 'experiments' / 'offline.yaml'}" in text
    assert f"tooleval train {tmp_path / 'out' / 'v1.jsonl'} --out {tmp_path / 'out' / 'models' / 'hybrid.json'}" in text
    assert f"tooleval run {tmp_path / 'out' / 'experiments' / 'offline-trained.yaml'}" in text


def test_the_experiment_runs_straight_after_the_import(tmp_path):
    from tasks.experiment.resolve_experiment import resolve_experiment

    import_bfcl(QUESTIONS, ANSWERS, tmp_path / "out")
    resolved = resolve_experiment(tmp_path / "out" / "experiments" / "offline.yaml")  # no [router-files]
    assert [arm.name for arm in resolved.arms] == ["lexical", "embedding"]


def test_the_trained_experiment_names_the_model_to_train_before_it_runs(tmp_path):
    from tasks.experiment.resolve_experiment import resolve_experiment

    import_bfcl(QUESTIONS, ANSWERS, tmp_path / "out")
    with pytest.raises(InputError) as caught:
        resolve_experiment(tmp_path / "out" / "experiments" / "offline-trained.yaml")
    (problem,) = caught.value.problems
    assert problem.rule == "router-files" and problem.where == "arm trained"
    assert "tooleval train" in problem.message and str(tmp_path / "out" / "models" / "hybrid.json") in problem.message


def test_empty_function_lists_import_and_expect_none(tmp_path):
    src = tmp_path / "BFCL_v4_live_irrelevance.json"
    shutil.copy(IRRELEVANCE, src)
    rewrite(src, lambda records: [{**records[0], "function": []}, *records[1:]])
    summary = import_bfcl(src, None, tmp_path / "out", label_none=True)
    first = load_version(tmp_path / "out", "v1").requests[0]
    assert first.tools == () and first.expected == "none"
    assert any("offer no function" in notice for notice in summary.notices)


def test_an_empty_ground_truth_labels_none_so_a_mixed_file_imports(tmp_path):
    questions, answers = copy_pair(tmp_path)
    rewrite(answers, lambda records: [{**records[0], "ground_truth": []}, *records[1:]])
    import_bfcl(questions, answers, tmp_path / "out")
    loaded = load_version(tmp_path / "out", "v1")
    assert [r.expected for r in loaded.requests] == ["none", "math.hypot", "get_weather"]


def test_files_merge_as_slices_of_one_set(tmp_path):
    out = tmp_path / "live"
    summary = import_bfcl_slices([BfclSource("answerable", QUESTIONS, ANSWERS),
                                  BfclSource("irrelevant", IRRELEVANCE, label_none=True)], out)
    loaded = load_version(out, "v1")
    assert loaded.manifest.slices == ["answerable", "irrelevant"]
    assert [r.slice for r in loaded.requests] == ["answerable"] * 3 + ["irrelevant"] * 2
    assert loaded.manifest.counts_by_label["none"] == 2
    assert summary.n_requests == 5
    assert "slice 'irrelevant'" in loaded.manifest.notes and "--label-none" in loaded.manifest.notes


def test_merged_files_need_distinct_ids_and_slice_names(tmp_path):
    with pytest.raises(InputError) as caught:
        import_bfcl_slices([BfclSource("a", QUESTIONS, ANSWERS), BfclSource("b", QUESTIONS, ANSWERS)], tmp_path / "o")
    assert {p.rule for p in caught.value.problems} == {"id-unique"}
    assert "multiple_0" in str(caught.value)
    with pytest.raises(InputError) as caught:
        import_bfcl_slices([BfclSource("a", QUESTIONS, ANSWERS), BfclSource("a", IRRELEVANCE, label_none=True)],
                           tmp_path / "o")
    assert caught.value.problems[0].rule == "slice-unique"
    assert not (tmp_path / "o").exists()


def test_cli_merges_slices_and_refuses_a_file_without_answers(tmp_path, capsys):
    from flows.cli import main

    out = tmp_path / "live"
    code = main(["import", "bfcl", "--slice", f"answerable={QUESTIONS},{ANSWERS}",
                 "--slice", f"irrelevant={IRRELEVANCE}", "--label-none", "irrelevant", "--out", str(out)])
    assert code == 0 and "requests: 5" in capsys.readouterr().out
    assert load_version(out, "v1").manifest.slices == ["answerable", "irrelevant"]

    code = main(["import", "bfcl", str(IRRELEVANCE), "--out", str(tmp_path / "irr")])
    err = capsys.readouterr().err
    assert code == 2 and "[answers-required]" in err and str(IRRELEVANCE) in err
    assert not (tmp_path / "irr").exists()
    assert main(["import", "bfcl", str(IRRELEVANCE), "--label-none", "--out", str(tmp_path / "irr")]) == 0

    code = main(["import", "bfcl", "--slice", f"a={QUESTIONS},{ANSWERS}", "--label-none", "b", "--out",
                 str(tmp_path / "x")])
    assert code == 2 and "[label-none]" in capsys.readouterr().err


def conflicting_merge(tmp_path: Path, capsys) -> tuple[Path, str]:
    """The fixture pair and an irrelevance file holding a copy of multiple_2 (same text up to case and
    spaces, same tools in another order) labelled 'none', as BFCL's live files do (live_multiple_262-125-1 /
    live_irrelevance_565-173-0), and multiple_0's text offered another tool; merged with the CLI as the
    README shows. The task-set folder and what the import printed."""
    from flows.cli import main

    multiple = {json.loads(line)["id"]: json.loads(line) for line in QUESTIONS.read_text().splitlines()}
    irrelevance = tmp_path / "BFCL_v4_live_irrelevance.json"
    shutil.copy(IRRELEVANCE, irrelevance)
    copy = dict(multiple["multiple_2"], id="live_irrelevance_565-173-0",
                question=[[{"role": "user", "content": "  what's the WEATHER in   Lyon?"}]],
                function=list(reversed(multiple["multiple_2"]["function"])))
    other_tools = dict(json.loads(IRRELEVANCE.read_text().splitlines()[0]), id="live_irrelevance_9-9-9",
                       question=multiple["multiple_0"]["question"])
    with irrelevance.open("a") as f:
        f.write(json.dumps(copy) + "\n" + json.dumps(other_tools) + "\n")
    out = tmp_path / "live"
    code = main(["import", "bfcl", "--slice", f"answerable={QUESTIONS},{ANSWERS}",
                 "--slice", f"irrelevant={irrelevance}", "--label-none", "irrelevant", "--out", str(out)])
    assert code == 0
    return out, capsys.readouterr().out


def test_a_merged_import_drops_and_lists_both_sides_of_a_cross_slice_label_conflict(tmp_path, capsys):
    out, printed = conflicting_merge(tmp_path, capsys)
    assert "requests: 5" in printed and "dropped 2 source rows: label_conflict 2" in printed
    (line,) = [text for text in printed.splitlines() if "label_conflict:" in text]
    assert "get_weather (multiple_2 [slice answerable])" in line
    assert "none (live_irrelevance_565-173-0 [slice irrelevant])" in line
    loaded = load_version(out, "v1")
    # the same text offered another tool is no conflict: kept
    assert sorted(r.id for r in loaded.requests) == ["live_irrelevance_0-0-0", "live_irrelevance_1-0-1",
                                                     "live_irrelevance_9-9-9", "multiple_0", "multiple_1"]
    notes = loaded.manifest.notes
    assert "label_conflict 2" in notes and "live_irrelevance_565-173-0" in notes and "Nothing dropped" not in notes


@pytest.mark.slow  # Great Expectations: ~8 s
def test_a_merged_import_with_a_conflicting_text_passes_the_label_checks(tmp_path, capsys):
    from flows.cli import main

    out, _ = conflicting_merge(tmp_path, capsys)
    assert main(["validate", str(out / "v1.jsonl")]) == 0, capsys.readouterr().err


def _experiment(out: Path, file_name: str = "offline.yaml") -> dict:
    return yaml.safe_load((out / "experiments" / file_name).read_text())


def test_experiments_are_named_and_described_after_the_files_given(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    other = Path(shutil.copy(QUESTIONS, src / "toolbench_g1.json"))  # BFCL's format, another set's data
    answers = Path(shutil.copy(ANSWERS, src / "toolbench_g1_answers.json"))
    import_bfcl(other, answers, tmp_path / "other")
    for file_name in ("offline.yaml", "offline-trained.yaml"):
        experiment = _experiment(tmp_path / "other", file_name)
        assert "bfcl" not in experiment["name"].lower() and "toolbench-g1" in experiment["name"]
        assert "toolbench_g1.json" in experiment["description"]
        assert not experiment["description"].startswith("BFCL")

    import_bfcl(QUESTIONS, ANSWERS, tmp_path / "bfcl")
    experiment = _experiment(tmp_path / "bfcl")
    assert experiment["name"] == "bfcl-multiple-offline"  # BFCL's own file: BFCL's name and category
    assert QUESTIONS.name in experiment["description"]


def test_a_label_none_slice_is_described_as_such(tmp_path):
    sources = [BfclSource(slice="multiple", questions=QUESTIONS, answers=ANSWERS),
               BfclSource(slice="irrelevant", questions=IRRELEVANCE, answers=None, label_none=True)]
    import_bfcl_slices(sources, tmp_path / "out")
    description = _experiment(tmp_path / "out")["description"]
    assert f"irrelevant ({IRRELEVANCE.name}, every label 'none')" in description
    assert f"multiple ({QUESTIONS.name})" in description
