"""The README stays true: every CLI command has --help and appears there; the schema section is current."""

from __future__ import annotations

import argparse

import pytest

from flows.cli import build_parser
from tests.factories import ROOT
from warehouse.schema_doc import BEGIN, END, schema_markdown

README = (ROOT / "README.md").read_text()


def command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                paths.append(prefix + (name,))
                paths += command_paths(sub, prefix + (name,))
    return paths


COMMANDS = command_paths(build_parser())


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) for p in COMMANDS])
def test_every_command_has_help_and_is_in_the_readme(path, capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([*path, "--help"])
    assert exited.value.code == 0
    assert "usage: tooleval " + " ".join(path) in capsys.readouterr().out
    assert f"tooleval {' '.join(path)}" in README


def test_the_readme_gives_the_two_commands():
    assert "make demo" in README and "make test" in README
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_readme_schema_is_generated_from_the_models():
    section = README[README.index(BEGIN):README.index(END) + len(END)]
    assert section == schema_markdown(), "run: python -m warehouse.schema_doc --write README.md"
