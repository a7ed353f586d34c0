"""Bad task files, surfaces and experiments are named by file, line / id and rule before anything runs."""

from __future__ import annotations

import json

import pytest

from tasks.files.input_errors import InputError
from tasks.surface.load_surface import load_surface
from tasks.surface.load_tasks import freeze_task_version, load_task_version
from tasks.run.prepare_run import prepare_run
from tasks.surface import task_checks
from tasks.surface.task_checks import check_tasks, remembered_checks
from tests.surface.tiny_desk import DEFAULT_TASKS, desk_task, write_desk


def problems_of(call) -> list[str]:
    with pytest.raises(InputError) as raised:
        call()
    return [str(p) for p in raised.value.problems]


def test_a_good_desk_loads_and_passes_every_rule(tmp_path):
    folder = write_desk(tmp_path)
    version = load_task_version(folder, "t1")
    surfaces = [load_surface(folder, "plain"), load_surface(folder, "prefixed")]
    report = check_tasks(version, surfaces)
    assert report.n_tasks == 4 and report.n_surfaces == 2
    assert version.fixtures(version.tasks[0])["tickets"]["T-1002"]["subject"] == "kettle leaks"
    assert version.manifest.counts_by_slice == {"questions": 1, "tickets": 3}


def test_a_pass_is_remembered_by_content_and_anything_changed_is_checked_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLEVAL_CACHE_DIR", str(tmp_path / "cache"))
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "rule.py").write_text("ONE = 1\n")
    monkeypatch.setattr(task_checks, "RULES", (rules,))
    monkeypatch.setattr(task_checks, "ROOT", tmp_path)
    folder = write_desk(tmp_path)
    surfaces = [load_surface(folder, "plain"), load_surface(folder, "prefixed")]

    def check(on=surfaces):
        return remembered_checks(load_task_version(folder, "t1"), on)

    first, again = check(), check()
    assert (first.cached, again.cached) == (False, True)
    assert (again.n_tasks, again.n_surfaces, again.n_rules) == (first.n_tasks, first.n_surfaces, 11) == (4, 2, 11)
    assert not check(surfaces[:1]).cached  # other surfaces: checked
    (rules / "rule.py").write_text("ONE = 2\n")
    assert not check().cached  # other rules: checked
    assert check().cached
    tasks = folder / "t1.jsonl"
    tasks.write_text(tasks.read_text().replace("T-1001", "T-1009"))  # an edit after the version was frozen
    for _ in range(2):  # refused each time: a failure is never kept
        (found,) = problems_of(check)
        assert "[manifest-hash]" in found


def test_schema_problems_name_the_line_and_id(tmp_path):
    folder = write_desk(tmp_path, freeze=False, tasks=[
        desk_task("ok", "Close T-1001.", {"state": [{"path": "tickets.T-1001.status", "equals": "closed"}]}),
        {"id": "bad-matcher", "request": "x", "slice": "tickets", "assert": {"reply": {"regex": "("}}},
        {"id": "no-assert", "request": "x", "slice": "tickets"},
    ])
    (folder / "t1.jsonl").write_text((folder / "t1.jsonl").read_text() + "not json\n")
    found = problems_of(lambda: freeze_task_version(folder, "t1", ["tickets"]))
    assert found[0].startswith(f"{folder / 't1.jsonl'}:line 2 (id bad-matcher): [task-schema]")
    assert "does not compile" in found[0]
    assert found[1].startswith(f"{folder / 't1.jsonl'}:line 3 (id no-assert): [task-schema]") and "assert" in found[1]
    assert found[2] == f"{folder / 't1.jsonl'}:line 4: [json-lines] not JSON: Expecting value"


def test_every_task_rule_names_its_line_id_and_rule(tmp_path):
    tasks = [
        DEFAULT_TASKS[0],
        {**DEFAULT_TASKS[0], "request": "Close T-1001 too."},                                # ids-unique
        desk_task("empty", "  ", {"reply": {"contains": "x"}}),                             # request-non-empty
        desk_task("slice", "Close T-1001.", {"reply": {"contains": "x"}}, slice_="billing"),  # slice-declared
        desk_task("include", "Close T-1001.", {"reply": {"contains": "x"}}, fixtures={"include": ["nope"]}),
        desk_task("fixtures", "Close T-1001.", {"reply": {"contains": "x"}},
                  fixtures={"tickets": {"T-1": {"owner": "a"}}}),                            # fixtures-schema
        desk_task("tool", "Close T-1001.", {"tool": "send_email"}),                          # assert-tool-known
        desk_task("args", "Close T-1001.", {"tool": "close_ticket", "args": {"id": "T-1"}}),  # assert-args-known
        desk_task("path", "Close T-1001.", {"state": [{"path": "invoices.x", "absent": True}]}),  # assert-state-path
    ]
    folder = write_desk(tmp_path, tasks=tasks)
    version = load_task_version(folder, "t1")
    found = problems_of(lambda: check_tasks(version, [load_surface(folder, "plain")]))
    rules = {p.split("[")[1].split("]")[0]: p for p in found}
    assert set(rules) == {"ids-unique", "request-non-empty", "slice-declared", "fixtures-include", "fixtures-schema",
                          "assert-tool-known", "assert-args-known", "assert-state-path"}
    assert rules["slice-declared"].startswith(f"{folder / 't1.jsonl'}:line 4 (id slice):")
    assert "no such file under fixtures/" in rules["fixtures-include"]
    assert "not a valid DeskState" in rules["fixtures-schema"] and "subject" in rules["fixtures-schema"]
    assert "send_email" in rules["assert-tool-known"] and "plain" in rules["assert-tool-known"]


def test_an_edited_frozen_version_is_refused(tmp_path):
    folder = write_desk(tmp_path)
    fixtures = folder / "fixtures" / "desk.json"
    data = json.loads(fixtures.read_text())
    data["tickets"]["T-1001"]["subject"] = "changed after freezing"
    fixtures.write_text(json.dumps(data))  # a shared fixture file is part of the frozen version
    version = load_task_version(folder, "t1")
    (found,) = problems_of(lambda: check_tasks(version, [load_surface(folder, "plain")]))
    assert "[manifest-hash]" in found and "edited after it was frozen" in found
    assert "version-immutable" in problems_of(lambda: freeze_task_version(folder, "t1", ["tickets"]))[0]


def test_surface_problems_name_the_file_and_rule(tmp_path):
    folder = write_desk(tmp_path)
    (folder / "surfaces" / "bad.yaml").write_text("name: bad\ntoolkit: desk:Desk\ntransform:\n  rename: {nope: x}\n")
    assert "[transform-tools] rename names 'nope'" in problems_of(lambda: load_surface(folder, "bad"))[0]
    (folder / "surfaces" / "clash.yaml").write_text(
        "name: clash\ntoolkit: desk:Desk\ntransform:\n  rename: {get_ticket: close_ticket}\n")
    assert "[tool-names-unique]" in problems_of(lambda: load_surface(folder, "clash"))[0]
    (folder / "surfaces" / "missing.yaml").write_text("name: missing\ntoolkit: desk:Nope\n")
    assert "[toolkit-class]" in problems_of(lambda: load_surface(folder, "missing"))[0]
    (folder / "backend" / "broken.py").write_text("def oops(:\n")
    (folder / "surfaces" / "broken.yaml").write_text("name: broken\ntoolkit: broken:Desk\n")
    found = problems_of(lambda: load_surface(folder, "broken"))[0]
    assert found.startswith(f"{folder / 'backend' / 'broken.py'}: [toolkit-import] SyntaxError")


def test_experiment_problems_come_before_any_run(tmp_path):
    folder = write_desk(tmp_path, experiment="""\
name: bad
taskset: ..
version: t1
seeds: [1]
defaults: {agent: baseline}
arms:
  - {name: A, surface: plain, prompt: default}
  - {name: B, surface: prefixed, prompt: careful}
  - {name: C, surface: nowhere, prompt: default}
  - {name: D, surface: plain, prompt: default, agent: openai, model: gpt-4.1-mini}
comparisons:
  - {from: A, to: B}
""")
    found = problems_of(lambda: prepare_run(folder / "experiments" / "four.yaml"))
    text = "\n".join(found)
    assert "[min-seeds]" in text
    assert "arm C: [file-exists]" in text and "nowhere.yaml" in text
    assert "arm D: [pinned-model]" in text and "arm D: [api-key]" in text


def test_the_one_change_rule_holds_for_task_arms(tmp_path):
    folder = write_desk(tmp_path, experiment="""\
name: two-changes
taskset: ..
version: t1
seeds: [1, 2, 3]
defaults: {agent: baseline}
arms:
  - {name: A, surface: plain, prompt: default, agent: baseline}
  - {name: D, surface: prefixed, prompt: careful, agent: baseline, options: {threshold: 0.5}}
""")
    (found,) = problems_of(lambda: prepare_run(folder / "experiments" / "four.yaml"))
    assert "comparison A -> D: [one-change] the arms differ in 3 respects (surface, prompt, agent)" in found


@pytest.mark.parametrize("matcher, said", [
    ({"startswith": "Your ticket"}, "unknown matcher 'startswith'"),
    ({"contains": "ticket", "regex": "T-"}, "one matcher per value"),
    ({"equals": "closed", "note": "x"}, "one matcher per value"),
])
def test_an_unknown_matcher_is_refused_not_taken_for_a_literal(tmp_path, matcher, said):
    """``{"startswith": ...}`` used to become an equality literal that nothing can equal."""
    folder = write_desk(tmp_path, freeze=False, tasks=[
        desk_task("ok", "Close T-1001.", {"state": [{"path": "tickets.T-1001.status", "equals": "closed"}]}),
        desk_task("reply", "Close T-1001.", {"reply": matcher}),
        desk_task("args", "Close T-1001.", {"tool": "close_ticket", "args": {"ticket_id": matcher}}),
    ])
    found = problems_of(lambda: freeze_task_version(folder, "t1", ["tickets"]))
    assert len(found) == 2
    assert found[0].startswith(f"{folder / 't1.jsonl'}:line 2 (id reply): [task-schema]") and said in found[0]
    assert found[1].startswith(f"{folder / 't1.jsonl'}:line 3 (id args): [task-schema]") and said in found[1]


def test_an_object_literal_still_compares_by_equality(tmp_path):
    from schemas.surface.task import Matcher
    assert Matcher.model_validate({"a": 1, "b": 2}).kind == "equals"
    assert Matcher.model_validate({"equals": {"startswith": "x"}}).value == {"startswith": "x"}


def test_an_empty_tasks_file_is_refused(tmp_path):
    """An empty tasks file validated OK with the manifest's counts."""
    folder = write_desk(tmp_path)
    (folder / "t1.jsonl").write_text("\n\n")
    found = problems_of(lambda: load_task_version(folder, "t1"))
    assert found == [f"{folder / 't1.jsonl'}: [not-empty] the tasks file holds no task: a version needs at least one"]
    fresh = write_desk(tmp_path / "fresh", freeze=False, tasks=[])
    found = problems_of(lambda: freeze_task_version(fresh, "t1", ["tickets"]))
    assert found[0].startswith(f"{fresh / 't1.jsonl'}: [not-empty]")


def test_a_tasks_fixtures_are_built_once_for_surfaces_sharing_a_state_model(tmp_path, monkeypatch):
    """fixtures-schema and assert-state-path read one starting state per task and state model, however many
    surfaces and state paths ask; a problem is still listed once per surface, as before."""
    tasks = [
        desk_task("two-paths", "Close T-1001.", {"state": [{"path": "tickets.T-1001.status", "equals": "closed"},
                                                           {"path": "tickets.T-1001.subject", "contains": "kettle"}]}),
        desk_task("fixtures", "Close T-1001.", {"state": [{"path": "tickets.T-1001.status", "equals": "closed"}]},
                  fixtures={"tickets": {"T-1": {"owner": "a"}}}),
    ]
    folder = write_desk(tmp_path, tasks=tasks)
    version = load_task_version(folder, "t1")
    surfaces = [load_surface(folder, "plain"), load_surface(folder, "prefixed")]
    toolkit = surfaces[0].backend.toolkit
    built = []
    fresh_state = toolkit.fresh_state.__func__

    def counted(cls, fixtures):
        built.append(sorted(fixtures))
        return fresh_state(cls, fixtures)

    monkeypatch.setattr(toolkit, "fresh_state", classmethod(counted))
    assert surfaces[1].backend.state_key == surfaces[0].backend.state_key
    found = problems_of(lambda: check_tasks(version, surfaces))
    assert len(built) == len(tasks)
    schema = [p for p in found if "[fixtures-schema]" in p]
    assert len(schema) == 2 and schema[0] == schema[1] and "(id fixtures)" in schema[0]
