"""A passed read-only check is remembered by everything it read (tasks/files/remembered_pass.py): the same
inputs answer from the kept pass without running the check; an edited, added or removed input, a variable
read with another value, or a failure runs it again; a failure is never kept."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tasks.files.remembered_pass import remembered

REAL_STAT, REAL_ENVIRON = os.stat, os.environ
NOTE = "(remembered: every file it read is as it was when it passed)"


class Check:
    """Reads ``data.txt``, lists the folder, reads ``CHECK_LEVEL``; counts its runs; fails on 'bad'."""

    def __init__(self, folder):
        self.folder, self.runs = folder, 0

    def __call__(self) -> list[str]:
        self.runs += 1
        text = (self.folder / "data.txt").read_text()
        if "bad" in text:
            raise ValueError("bad data")
        optional = self.folder / "optional.txt"
        return [f"OK {text.strip()}", f"files {len(list(self.folder.iterdir()))}",
                f"level {os.environ.get('CHECK_LEVEL')}", f"optional {optional.is_file()}"]


@pytest.fixture
def check(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLEVAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CHECK_LEVEL", raising=False)
    folder = tmp_path / "inputs"
    folder.mkdir()
    (folder / "data.txt").write_text("one\n")
    return Check(folder)


def ask(check: Check) -> list[str]:
    return remembered("test-check", [str(check.folder)], check)


def test_the_same_inputs_answer_from_the_kept_pass(check):
    first = ask(check)
    assert first == ["OK one", "files 1", "level None", "optional False"]
    assert ask(check) == [*first, NOTE] and check.runs == 1
    assert remembered("test-check", ["other arguments"], check) == first and check.runs == 2


def test_an_edited_file_runs_the_check_again(check):
    ask(check)
    (check.folder / "data.txt").write_text("two\n")
    assert ask(check) == ["OK two", "files 1", "level None", "optional False"] and check.runs == 2


def test_an_edit_of_another_size_runs_the_check_again(check):
    ask(check)
    (check.folder / "data.txt").write_text("one more\n")
    assert ask(check) == ["OK one more", "files 1", "level None", "optional False"] and check.runs == 2


def test_a_file_added_to_a_listed_folder_runs_the_check_again(check):
    ask(check)
    (check.folder / "more.txt").write_text("x")
    assert ask(check)[1] == "files 2" and check.runs == 2


def test_a_file_that_was_missing_and_is_there_now_runs_the_check_again(check):
    optional = check.folder / "optional.txt"

    def asks_whether_it_is_there() -> list[str]:  # lists no folder and opens nothing
        check.runs += 1
        return [f"optional {optional.is_file()}"]

    remembered("optional", [], asks_whether_it_is_there)
    assert remembered("optional", [], asks_whether_it_is_there)[-1] == NOTE and check.runs == 1
    optional.write_text("x")
    assert remembered("optional", [], asks_whether_it_is_there) == ["optional True"] and check.runs == 2


def test_a_variable_read_with_another_value_runs_the_check_again(check, monkeypatch):
    ask(check)
    monkeypatch.setenv("CHECK_LEVEL", "3")
    assert ask(check)[2] == "level 3" and check.runs == 2
    monkeypatch.setenv("UNREAD_BY_THE_CHECK", "1")
    assert ask(check)[-1] == NOTE and check.runs == 2


def test_a_failure_is_never_kept(check):
    ask(check)
    (check.folder / "data.txt").write_text("bad\n")
    for runs in (2, 3):
        with pytest.raises(ValueError, match="bad data"):
            ask(check)
        assert check.runs == runs
    (check.folder / "data.txt").write_text("one\n")
    assert ask(check)[-1] == NOTE, "the pass of these very bytes is still kept"
    assert os.environ.__class__.__name__ == "_Environ", "the recording view of the environment is gone"


def test_a_check_that_reads_the_whole_environment_depends_on_all_of_it(check, monkeypatch):
    def whole() -> list[str]:
        check.runs += 1
        os.environ["SET_BY_THE_CHECK"] = "1"  # not an input: the environment as the check found it is
        return [f"{len(dict(os.environ))} variables"]

    monkeypatch.delenv("SET_BY_THE_CHECK", raising=False)
    remembered("whole", [], whole)
    monkeypatch.delenv("SET_BY_THE_CHECK")
    assert remembered("whole", [], whole)[-1] == NOTE and check.runs == 1
    monkeypatch.setenv("ANY_OTHER_VARIABLE", "1")
    remembered("whole", [], whole)
    assert check.runs == 2


def test_a_check_that_started_a_process_is_not_kept(check):
    def asks_another_process() -> list[str]:
        check.runs += 1
        done = subprocess.run([sys.executable, "-c", "print('OK')"], capture_output=True, text=True, check=True)
        return [done.stdout.strip()]

    assert remembered("process", [], asks_another_process) == ["OK"]
    assert remembered("process", [], asks_another_process) == ["OK"] and check.runs == 2


def test_a_check_inside_a_check_is_noted_by_the_outer_one_and_not_kept_itself(check):
    def outer() -> list[str]:
        return [*remembered("inner", [], check), "outer"]

    remembered("outer", [], outer)
    assert check.runs == 1
    assert remembered("outer", [], outer)[-1] == NOTE and check.runs == 1
    remembered("inner", [], check)
    assert check.runs == 2, "the inner check was run, not kept, inside the outer one"
    (check.folder / "data.txt").write_text("two\n")
    assert remembered("outer", [], outer)[0] == "OK two" and check.runs == 3
    assert os.stat is REAL_STAT and os.environ is REAL_ENVIRON, "the recording os.stat and os.environ are gone"
