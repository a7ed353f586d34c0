"""The label checks (Great Expectations, seconds on a cold cache and 70-110 s at load 12-23) come last, after
every cheap check of a run, and a pass is remembered by content, not by where the task set lies."""

from __future__ import annotations

import shutil

import pytest

from flows.cli import EXIT_BAD_INPUT, main
from tasks.taskset.check_cache import cache_dir
from tasks.taskset.label_checks import check_labels
from tasks.taskset.load_taskset import load_catalogue, load_version
from tests.factories.taskset import REQUESTS, write_experiment, write_taskset


@pytest.fixture
def cold_cache(tmp_path, monkeypatch):
    """An empty cache folder of this test: a pass the label checks remember shows as a file in it."""
    monkeypatch.setenv("TOOLEVAL_CACHE_DIR", str(tmp_path / "cache"))
    return cache_dir()


def remembered(folder) -> list[str]:
    return sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []


@pytest.mark.parametrize("bad", ["trace", "warehouse-file", "criteria"])
def test_cheap_bad_input_is_refused_before_the_label_checks_run(tmp_path, capsys, cold_cache, bad):
    taskset = write_taskset(tmp_path / "shop")
    experiment = write_experiment(taskset, **({"criteria": "nope.yaml"} if bad == "criteria" else {}))
    warehouse = tmp_path / "wh"
    args = ["run", str(experiment), "--warehouse", str(warehouse)]
    if bad == "trace":
        args += ["--trace", "otlp://nowhere"]
        rule = "trace"
    elif bad == "warehouse-file":
        warehouse.write_text("x")
        rule = "[warehouse-writable]"
    else:
        rule = "nope.yaml"
    code = main(args)
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and rule in err, err
    assert remembered(cold_cache) == []  # the label checks did not run: a pass would have been remembered


@pytest.mark.slow  # Great Expectations in a child process: ~10 s
def test_the_label_checks_still_run_before_any_selection_and_refuse_a_bad_label(tmp_path, capsys, cold_cache):
    taskset = write_taskset(tmp_path / "shop", requests=[{**REQUESTS[0], "expected": "no_such_tool"}, *REQUESTS[1:]])
    code = main(["run", str(write_experiment(taskset)), "--warehouse", str(tmp_path / "wh")])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "no_such_tool" in err and "line 1" in err, err
    assert not (tmp_path / "wh").exists() and remembered(cold_cache) == []


@pytest.mark.slow  # Great Expectations twice: ~10 s
def test_a_pass_is_remembered_by_content_so_a_copied_task_set_is_not_checked_again(tmp_path, cold_cache):
    taskset = write_taskset(tmp_path / "shop")
    catalogue = [load_catalogue(taskset, "base")]
    first = check_labels(load_version(taskset, "v1"), catalogue)
    assert not first.cached and len(remembered(cold_cache)) == 1
    copy = tmp_path / "elsewhere" / "shop"
    shutil.copytree(taskset, copy)
    again = check_labels(load_version(copy, "v1"), [load_catalogue(copy, "base")])
    assert again.cached and (again.n_requests, again.n_expectations) == (first.n_requests, first.n_expectations)
    assert len(remembered(cold_cache)) == 1
    # another content is checked anew: one request's text changed is a different key
    other = write_taskset(tmp_path / "other" / "shop", requests=[
        *REQUESTS[:3], {**REQUESTS[3], "messages": [{"role": "user", "content": "what is the return window"}]},
        *REQUESTS[4:]])
    assert not check_labels(load_version(other, "v1"), [load_catalogue(other, "base")]).cached
    assert len(remembered(cold_cache)) == 2
