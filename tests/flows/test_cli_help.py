"""``tooleval --help`` and ``--version``: grouped by job, examples that work as written, every help text fit for an
80-column terminal, and the parser built without importing the tool; the read-only commands (report, tasks
report, sql, compare, plan, validate of a remembered version, tasks validate) import neither Prefect, Great
Expectations, torch, scipy nor a provider's SDK (behaviours; the CPU time they buy is measured by
benchmarks/cli_startup.py, not here)."""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys

import duckdb
import pytest

from flows.cli import COMPARE_RESPECTS, build_parser
from flows.cli_help import EXAMPLES, JOBS, command_helps, version_text
from flows.run_cli import TASK_RUNNERS
from tests.docs_text import page
from tests.factories import ROOT

HEAVY = ("prefect", "duckdb", "polars", "pyarrow", "pandas", "great_expectations", "pydantic", "rich", "flows.api")
NOT_FOR_READING = ("prefect", "great_expectations", "torch", "scipy", "openai", "anthropic", "rich")
"""What no read-only command imports: the orchestrator, the label checks' engine, the embedding model's and the
statistics' heavy libraries, the providers' SDKs, and rich (tasks/report/terminal.py styles the reports)."""


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


def imported_by(args: list[str], modules: tuple[str, ...] = HEAVY, env: dict[str, str] | None = None,
                code: int = 0) -> set[str]:
    """Which of ``modules`` a fresh interpreter has imported after running ``tooleval args`` (``--help`` and
    ``--version`` end in the parser's exit), which must exit with ``code``."""
    probe = ("import sys\nfrom flows.cli import main\ntry:\n    code = main(sys.argv[1:])\nexcept SystemExit as stop:\n"
             "    code = stop.code or 0\n"
             f"print('\\nexit', code, 'imported:', *[m for m in {modules!r} if m in sys.modules])")
    done = subprocess.run(check=False, args=[sys.executable, "-c", probe, *args], cwd=ROOT,
                          env={**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    last = done.stdout.splitlines()[-1].split()
    assert last[:2] == ["exit", str(code)], done.stdout + done.stderr
    return set(last[3:])


def test_help_and_version_import_none_of_the_tool():
    assert imported_by(["--help"]) == set()
    assert imported_by(["--version"]) == set()


@pytest.mark.parametrize("path", [("run",), ("report",), ("tasks", "report"), ("sql",), ("import", "mcp")],
                         ids=lambda p: " ".join(p))
def test_a_commands_help_imports_none_of_the_tool(path):
    assert imported_by([*path, "--help"]) == set()


@pytest.fixture
def read_only_commands(tmp_path):
    """Each read-only command on a warehouse holding a selection run and a task run's record, and ``validate`` of
    a version whose label checks passed (remembered, in this test's own cache folder)."""
    from tasks.taskset.check_cache import content_check_key, remember
    from tasks.taskset.load_taskset import content_hash, load_catalogue, load_manifest
    from tests.factories.rows import RUN, TASK_RUN, warehouse_with_a_task_run

    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("TOOLEVAL_CACHE_DIR", str(tmp_path / "cache"))
    taskset = ROOT / "tasksets" / "support"
    catalogues = [load_catalogue(taskset, p.stem) for p in sorted((taskset / "catalogues").glob("*.json"))]
    tool_names = [name for catalogue in catalogues for name in catalogue.names]
    remember(content_check_key(taskset, load_manifest(taskset, "v1"), content_hash(taskset, "v1"), tool_names, None),
             {"n_requests": 540, "n_expectations": 8, "n_weights": 0})
    monkeypatch.undo()
    folder = warehouse_with_a_task_run(tmp_path)
    con = duckdb.connect(str(folder / "tooleval.duckdb"))
    for table in ("landed_rows", "runs", "arms", "comparisons"):  # a second selection run, the first's repeat
        con.execute(f"INSERT INTO {table} SELECT * REPLACE ('run2' AS run_id) FROM {table} WHERE run_id = ?", [RUN])
    con.close()
    warehouse = str(folder)
    return {"env": {"TOOLEVAL_CACHE_DIR": str(tmp_path / "cache")}, "commands": [
        ["report", "--warehouse", warehouse], ["report", RUN, "--warehouse", warehouse],
        ["tasks", "report", TASK_RUN, "--warehouse", warehouse], ["sql", "--warehouse", warehouse, "select count(*) from runs"],
        ["compare", RUN, "run2", "--warehouse", warehouse], ["plan", "--accuracy", "0.9", "--requests", "200"],
        ["validate", "tasksets/support/v1.jsonl"], ["tasks", "validate", "tasksets/support_tasks/t1.jsonl"]]}


def test_the_read_only_commands_import_no_orchestrator_checks_engine_model_or_provider(read_only_commands):
    for args in read_only_commands["commands"]:
        assert imported_by(args, NOT_FOR_READING, read_only_commands["env"]) == set(), args


def test_validate_of_a_remembered_version_reads_no_request_table(read_only_commands):
    assert imported_by(["validate", "tasksets/support/v1.jsonl"], ("polars", "tasks.taskset.label_checks"),
                       read_only_commands["env"]) == set()


def test_validate_with_remembered_catalogues_checks_no_tool_schema_again(read_only_commands):
    env = read_only_commands["env"]
    first = subprocess.run([sys.executable, "-m", "flows.launch", "validate", "tasksets/support/v1.jsonl"], cwd=ROOT,
                           env={**os.environ, **env}, capture_output=True, text=True, check=False)
    assert first.returncode == 0 and "remembered" in first.stdout, first.stderr
    assert imported_by(["validate", "tasksets/support/v1.jsonl"], ("jsonschema",), env) == set()


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
