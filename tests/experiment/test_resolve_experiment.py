"""The one-change rule, the seed minimum and arm completeness, refused before anything runs."""

from __future__ import annotations

import pytest

from tasks.experiment.resolve_experiment import resolve_experiment
from tasks.files.input_errors import InputError
from tests.factories import SUPPORT
from tests.factories.taskset import write_experiment, write_taskset


def rules(path) -> set[tuple[str, str]]:
    with pytest.raises(InputError) as caught:
        resolve_experiment(path)
    assert all(p.file == str(path) for p in caught.value.problems)
    return {(p.rule, p.where) for p in caught.value.problems}


@pytest.fixture
def taskset(tmp_path):
    root = write_taskset(tmp_path / "shop")
    (root / "catalogues" / "small.json").write_text('{"name": "small", "extends": null, "tools": '
                                                    '[{"name": "search_kb", "description": "Search help."}]}')
    (root / "prompts" / "terse.md").write_text("Be terse.\n")
    return root


def test_two_changes_in_one_comparison_are_refused(taskset):
    path = write_experiment(taskset, arms=[{"name": "a"}, {"name": "b", "catalogue": "small", "prompt": "terse"}],
                            comparisons="ladder")
    assert rules(path) == {("one-change", "comparison a -> b")}


def test_declared_second_change_is_accepted(taskset):
    path = write_experiment(taskset, arms=[{"name": "a"}, {"name": "b", "catalogue": "small", "prompt": "terse"}],
                            comparisons=[{"from": "a", "to": "b", "declare": ["prompt"]}])
    resolved = resolve_experiment(path)
    assert resolved.comparisons[0].changed == ("catalogue", "prompt")


def test_identical_arms_compared_are_refused(taskset):
    path = write_experiment(taskset, arms=[{"name": "a"}, {"name": "b"}], comparisons="ladder")
    assert rules(path) == {("one-change", "comparison a -> b")}


def test_sampling_options_count_as_a_selector_change(taskset):
    path = write_experiment(taskset, arms=[{"name": "a"}, {"name": "b", "options": {"temperature": 0.5}}],
                            comparisons="ladder")
    assert resolve_experiment(path).comparisons[0].changed == ("selector",)


def test_fewer_than_three_seeds_unless_declared(taskset):
    assert rules(write_experiment(taskset, seeds=[1, 2])) == {("min-seeds", "seeds")}
    declared = write_experiment(taskset, "declared.yaml", seeds=[1], declared={"few_seeds": "smoke test"})
    assert resolve_experiment(declared).seeds == [1]


def test_incomplete_arm_and_unknown_catalogue(taskset):
    path = write_experiment(taskset, defaults={"prompt": "default", "selector": "lexical"},
                            arms=[{"name": "a", "catalogue": "base"}, {"name": "b", "catalogue": "nope", "model": "m"}])
    found = rules(path)
    assert ("arm-complete", "arm a") in found
    assert any(rule == "file-exists" for rule, _ in found)


def test_yaml_error_names_the_line(taskset):
    path = taskset / "experiments" / "broken.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text("name: x\nseeds: [1, 2\narms: []\n")
    assert {rule for rule, _ in rules(path)} == {"yaml"}


def test_the_bundled_ladder_is_four_rungs_each_one_catalogue_change():
    resolved = resolve_experiment(SUPPORT / "experiments" / "ladder.yaml")
    assert [len(a.catalogue.tools) for a in resolved.arms] == [18, 22, 26, 30]
    assert [c.changed for c in resolved.comparisons] == [("catalogue",)] * 3
    assert len(resolved.seeds) == 3


def test_a_key_given_twice_is_named_not_silently_overwritten(taskset):
    path = taskset / "experiments" / "twice.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text("name: x\nseeds: [1, 2, 3]\nseeds: [4]\narms: []\n")
    with pytest.raises(InputError) as caught:
        resolve_experiment(path)
    [problem] = caught.value.problems
    assert (problem.rule, problem.where) == ("yaml-duplicate-key", "line 3")
    assert "'seeds' is given twice (lines 2 and 3)" in problem.message


def test_names_that_cannot_be_a_path_part_are_refused(taskset):
    """A 300-character arm name passed, then every unit failed 'File name too long' on its
    Parquet folder (arm=<name>), leaving the other arm's rows behind."""
    long = "a" * 300
    found = rules(write_experiment(taskset, arms=[{"name": long}, {"name": "b", "prompt": "terse"}],
                                   comparisons="ladder"))
    assert found == {("arm-name-length", f"arm {'a' * 40}...")}
    found = rules(write_experiment(taskset, "dots.yaml", arms=[{"name": ".."}, {"name": "b", "prompt": "terse"}],
                                   comparisons="ladder"))
    assert found == {("arm-name-path", "arm ..")}
    ok = write_experiment(taskset, "ok.yaml", arms=[{"name": "a" * 100}, {"name": "b", "prompt": "terse"}],
                          comparisons="ladder")
    assert resolve_experiment(ok).arms[0].name == "a" * 100


@pytest.mark.parametrize("name", ["x" * 101, "../elsewhere", "a/b", ".", "  ", "nul\x00byte"])
def test_an_experiment_name_that_cannot_be_part_of_a_file_name_is_refused(taskset, name):
    assert rules(write_experiment(taskset, "named.yaml", name=name)) == {("experiment-name", "name")}
