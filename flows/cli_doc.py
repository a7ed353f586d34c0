"""The CLI reference page, generated from the parser: every command's ``--help``, as ``tooleval`` prints it.

``python -m flows.cli_doc`` prints the page; ``python -m flows.cli_doc --write docs/reference/cli.md`` writes
it (a test keeps the file equal to what this prints). Help is laid out at a fixed width (``WIDTH`` columns),
so the page does not depend on the terminal that generated it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

WIDTH = 100
PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "cli.md"
REGENERATE = "python -m flows.cli_doc --write docs/reference/cli.md"

HEADER = f"""# CLI reference

Every `tooleval` command and its `--help`, generated from the parser (`flows.cli.build_parser`) by
`{REGENERATE}`; a test fails when this page differs from what the parser
prints. What each command is for, with examples: [Commands](commands.md); how each one ends:
[Exit codes](exit-codes.md).
"""


def command_parsers(parser: argparse.ArgumentParser,
                    path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (sub)command's parser with its path (``("tasks", "run")``), depth first, in the parser's order."""
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += command_parsers(sub, path + (name,))
    return found


def help_text(parser: argparse.ArgumentParser) -> str:
    """``parser.format_help()`` at WIDTH columns, whatever the terminal."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        return parser.format_help().rstrip()
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved


def cli_markdown() -> str:
    from flows.cli import build_parser

    out = [HEADER]
    for path, parser in command_parsers(build_parser()):
        title = " ".join(("tooleval", *path))
        out += [f"## `{title}`", "", "```text", help_text(parser), "```", ""]
    return "\n".join(out)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"]:
        Path(sys.argv[2] if len(sys.argv) > 2 else PAGE).write_text(cli_markdown())
    else:
        sys.stdout.write(cli_markdown())
