"""What ``tooleval --help`` and ``tooleval --version`` say: the commands grouped by the job a user comes with,
real examples, where the documentation is, and the installed version.

Imports only the standard library: ``--help`` and ``--version`` (and every command's ``--help``) build the
parser and exit without loading any command's implementation (tests/test_readme_and_cli.py checks that
Prefect, DuckDB and Polars stay unimported).
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

DESCRIPTION = (
    "Evaluate an LLM agent's tool use before and after a change: which tool it picks for each labelled request "
    "(per tool, per confused pair, weighted by production traffic), and how it does tasks on a tool surface "
    "(Python toolkits or MCP servers, graded on the outcome); confidence-gated routers and trained decision "
    "models; every decision as an OpenInference trace. Each run lands its rows in a DuckDB warehouse and ends "
    "PASS or FAIL against acceptance criteria registered before it ran.")

JOBS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("evaluate a catalogue change (tool selection)", ("run", "plan", "compare")),
    ("instrument a surface change (tasks on a tool surface)",
     ("tasks run", "tasks report", "tasks validate", "tasks catalogue")),
    ("routers and decision models", ("fit", "train")),
    ("task sets and imports", ("validate", "freeze", "import bfcl", "import metatool", "import mcp",
                                "import arguments")),
    ("weekly runs and deployments (live traffic)", ("resample", "queue import", "queue export", "register")),
    ("reading results", ("report", "sql", "phoenix")),
    ("the Prefect server kept between runs", ("server status", "server stop")),
)
"""Every command path once, under the job it serves (a test checks none is missing or listed twice)."""

EXAMPLES = """\
examples, from the repository root:
  tooleval run tasksets/support/experiments/ladder.yaml     # 18 -> 30 tools
  tooleval run tasksets/support/experiments/routers.yaml    # offline routers
  tooleval tasks run tasksets/support_tasks/experiments/four_arms.yaml
  tooleval tasks run tasksets/mcp_office/experiments/four_arms.yaml  # MCP
  tooleval fit tasksets/support/experiments/routers.yaml --arm embedding-30
  tooleval validate tasksets/support/v1.jsonl --weights 2026-W36-W47
  tooleval validate tasksets/support/experiments/ladder.yaml  # run's checks
  tooleval plan --accuracy 0.88 --requests 60 --half-width 5
  tooleval report --format markdown                         # the latest run
  tooleval sql "select arm, slice, accuracy from aggregate_accuracy"

weekly and pre-change runs as Prefect deployments (docs/weekly/deploying.md):
  prefect --no-prompt deploy --all --prefect-file deployments/prefect.yaml

exit codes: 0 passed, 1 a gate failed, 2 bad input, 3 model mismatch, 4 not
judged, 5 not registered (DuckDB file held), 6 crashed, 7 not comparable

documentation: docs/ (mkdocs serve) and README.md"""
"""Every command in it works as written from the repository root (tests/test_readme_and_cli.py parses each)."""

WAREHOUSE_HELP = "warehouse directory (default: $TOOLEVAL_WAREHOUSE, else warehouse/ in the checkout)"
"""The one help text of every --warehouse option."""


def version_text() -> str:
    """'tooleval 0.1.0' from the installed distribution's metadata; from a checkout that is not installed,
    the version in its pyproject.toml, said to be a checkout; else 'unknown'."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"tooleval {version('tooleval')}"
    except PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        import tomllib

        found = tomllib.loads(pyproject.read_text())["project"]["version"]
        return f"tooleval {found} (not installed: the checkout at {pyproject.parent})"
    except (OSError, KeyError, ValueError):
        return "tooleval unknown (not installed, no pyproject.toml)"


class VersionAction(argparse.Action):
    """``--version``: the version is looked up only when asked for."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())  # on stdout, as argparse's own version action prints
        parser.exit()


def command_helps(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, str]:
    """Every command path under ``parser`` ('run', 'tasks run', ...) and its one-line help."""
    found: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(subcommand_helps(action, prefix))
    return found


def subcommand_helps(action: argparse._SubParsersAction, prefix: str = "") -> dict[str, str]:
    """Every command path under one subcommands action and its one-line help."""
    helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    found: dict[str, str] = {}
    for name, sub in action.choices.items():
        found.update(command_helps(sub, f"{prefix}{name} ") or {f"{prefix}{name}": helps.get(name, "")})
    return found


class JobsHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """A description of one line folded to the width, an epilog of several lines (examples) kept as written;
    at the top level, the command list grouped by JOBS (each command's own help text, wrapped)."""

    def _fill_text(self, text, width, indent):
        if "\n" not in text:  # the description: folded to the width
            return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent)
        return super()._fill_text(text, width, indent)  # the epilog: as written

    def _format_action(self, action):
        if not isinstance(action, argparse._SubParsersAction) or not getattr(action, "jobs", None):
            return super()._format_action(action)
        helps = subcommand_helps(action)
        column = min(max(len(path) for _, paths in action.jobs for path in paths) + 6, 24)
        width = max(self._width, column + 30)
        lines = []
        for n, (title, paths) in enumerate(action.jobs):
            lines += [""] * bool(n) + [f"  {title}:"]
            for path in paths:
                wrapped = textwrap.wrap(helps[path], width - column) or [""]
                lines.append(f"    {path:<{column - 4}}{wrapped[0]}" if len(path) <= column - 5
                             else f"    {path}\n{' ' * column}{wrapped[0]}")
                lines += [" " * column + line for line in wrapped[1:]]
        return "\n".join(lines) + "\n"
