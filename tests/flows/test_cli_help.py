"""``tooleval --help`` and ``--version``: grouped by job, examples that work as written, every help text fit for an
80-column terminal, and the parser built without importing the tool (a behaviour; the CPU time it buys is
measured by benchmarks/cli_startup.py, not here)."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys

import pytest

from flows.cli import COMPARE_RESPECTS, build_parser
from flows.cli_help import EXAMPLES, JOBS, command_helps, version_text
from flows.run_cli import TASK_RUNNERS
from tests.docs_text import page
from tests.factories import ROOT

HEAVY = ("prefect", "duckdb", "polars", "pyarrow", "pandas", "great_expectations", "pydantic", "rich", "flows.api")


def subcommand_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                paths.append(prefix + (name,))
                paths += subcommand_paths(sub, prefix + (name,))
    return paths


PATHS = subcommand_paths(build_parser())


def run_tooleval(*args: str) -> subprocess.CompletedProcess:
    """The console script's entry point in a fresh interpreter (what a user's ``tooleval ARGS`` runs)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    return subprocess.run(check=False, args=[sys.executable, "-m", "flows.launch", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def imported_by(args: list[str]) -> set[str]:
    """The heavy modules a fresh interpreter has imported after parsing ``args`` (which end with --help or
    --version, so the parser exits)."""
    probe = ("import sys\nfrom flows.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
             f"print('imported:', *[m for m in {HEAVY!r} if m in sys.modules])")
    done = subprocess.run(check=False, args=[sys.executable, "-c", probe, *args], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.splitlines()[-1].split()[1:])


def test_help_and_version_import_none_of_the_tool():
    assert imported_by(["--help"]) == set()
    assert imported_by(["--version"]) == set()


@pytest.mark.parametrize("path", [("run",), ("report",), ("tasks", "report"), ("sql",), ("import", "mcp")],
                         ids=lambda p: " ".join(p))
def test_a_commands_help_imports_none_of_the_tool(path):
    assert imported_by([*path, "--help"]) == set()


def test_the_console_script_answers_help_and_version():
    shown = run_tooleval("--help")
    assert shown.returncode == 0 and shown.stdout.startswith("usage: tooleval")
    for words in ("tasks on a tool surface", "routers", "trace", "docs/ (mkdocs serve) and README.md"):
        assert words in " ".join(shown.stdout.split()), words
    version = run_tooleval("--version")
    assert version.returncode == 0 and version.stdout.strip() == version_text()
    assert version.stdout.startswith("tooleval ") and "unknown" not in version.stdout


def test_every_command_is_listed_once_under_a_job():
    listed = [path for _, paths in JOBS for path in paths]
    assert len(listed) == len(set(listed))
    assert set(listed) == set(command_helps(build_parser()))
    top = build_parser().format_help()
    for title, paths in JOBS:
        assert title in top
        assert all(path in top for path in paths)


def test_the_examples_parse_and_name_files_that_exist():
    commands = [shlex.split(line.split("#")[0]) for line in EXAMPLES.splitlines() if line.startswith("  tooleval ")]
    assert len(commands) >= 8
    for words in commands:
        args = build_parser().parse_args(words[1:])
        assert callable(args.func)
        for word in words[1:]:
            if word.startswith("tasksets/"):
                assert (ROOT / word).exists(), word


@pytest.mark.parametrize("path", [(), *PATHS], ids=lambda p: " ".join(p) or "tooleval")
def test_help_fits_80_columns_and_shows_no_escapes(path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        build_parser().parse_args([*path, "--help"])
    text = capsys.readouterr().out
    assert "%%" not in text and "%(" not in text
    assert [line for line in text.splitlines() if len(line) > 80] == []


def test_every_warehouse_option_has_the_same_default_text(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # one line per option
    texts = set()
    for path in PATHS:
        with pytest.raises(SystemExit):
            build_parser().parse_args([*path, "--help"])
        for line in capsys.readouterr().out.splitlines():
            if line.strip().startswith("--warehouse DIR"):
                texts.add(line.split("DIR", 1)[1].strip())
    assert texts == {"warehouse directory (default: $TOOLEVAL_WAREHOUSE, else warehouse/ in the checkout)"}


def test_the_parsers_choices_are_the_implementations():
    from flows.task_runners import RUNNERS
    from tasks.selection.run_compare import RESPECTS

    assert TASK_RUNNERS == RUNNERS and COMPARE_RESPECTS == RESPECTS
    assert "--task-runner " + "\\|".join(RUNNERS) in page("reference/commands.md")


def test_the_version_of_a_checkout_that_is_not_installed(monkeypatch):
    import importlib.metadata

    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    text = version_text()
    assert text.startswith("tooleval 0.") and f"not installed: the checkout at {ROOT}" in text
