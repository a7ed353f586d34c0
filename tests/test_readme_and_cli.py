"""The docs stay true: every CLI command has --help and is documented, the generated reference pages (CLI,
warehouse schema) are current, the README stays a short front door, and every relative link resolves."""

from __future__ import annotations

import argparse

import pytest
import yaml

from flows.cli import build_parser
from flows.cli_doc import PAGE as CLI_PAGE, REGENERATE as CLI_REGENERATE, cli_markdown
from tests.docs_text import DOCS, README, anchors, docs_text, page, pages, relative_links
from tests.factories import ROOT
from warehouse.schema_doc import BEGIN, END, PAGE as SCHEMA_PAGE, REGENERATE as SCHEMA_REGENERATE, schema_markdown

README_MAX_LINES = 250


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
def test_every_command_has_help_and_is_documented(path, capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([*path, "--help"])
    assert exited.value.code == 0
    assert "usage: tooleval " + " ".join(path) in capsys.readouterr().out
    command = f"tooleval {' '.join(path)}"
    assert f"## `{command}`" in page("reference/cli.md"), f"not in the CLI reference: run {CLI_REGENERATE}"
    assert command in docs_text(generated=False), f"`{command}` is in no hand-written page (docs/reference/commands.md)"


def test_the_cli_reference_page_is_generated_from_the_parser():
    assert CLI_PAGE == DOCS / "reference" / "cli.md"
    assert CLI_PAGE.read_text() == cli_markdown(), f"the CLI reference is stale: run {CLI_REGENERATE}"


def test_the_schema_page_is_generated_from_the_models():
    assert SCHEMA_PAGE == DOCS / "reference" / "warehouse.md"
    text = SCHEMA_PAGE.read_text()
    section = text[text.index(BEGIN):text.index(END) + len(END)]
    assert section == schema_markdown(), f"the warehouse schema page is stale: run {SCHEMA_REGENERATE}"
    # views list their columns too (an analyst writes SQL against them)
    views = [line for line in section.splitlines() if line.startswith("- `")]
    columns = [line for line in section.splitlines() if line.startswith("  Columns: `")]
    assert len(views) == len(columns) > 20 and "`seed_spread` double" in section


def test_the_readme_gives_the_two_commands():
    text = README.read_text()
    assert "make demo" in text and "make test" in text
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_the_readme_stays_a_short_front_door():
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines: move text into docs/ (at most {README_MAX_LINES})"
    assert "docs/index.md" in README.read_text()


@pytest.mark.parametrize("source", [README, *pages()], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_to_a_file_that_exists(source):
    text = source.read_text()
    broken = []
    for target in relative_links(text):
        path, _, anchor = target.partition("#")
        resolved = (source.parent / path).resolve() if path else source
        if not resolved.is_file():
            broken.append(f"{target}: no file {resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved}")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text()):
            broken.append(f"{target}: no heading with id '{anchor}' in {resolved.relative_to(ROOT)}")
    assert not broken, f"{source.relative_to(ROOT)}: " + "; ".join(broken)


def nav_pages(entries) -> set[str]:
    found = set()
    for entry in entries:
        if isinstance(entry, str):
            found.add(entry)
        elif isinstance(entry, dict):
            for value in entry.values():
                found |= nav_pages(value) if isinstance(value, list) else {value}
    return found


def test_every_page_is_in_the_site_navigation():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    in_nav = nav_pages(config["nav"])
    on_disk = {str(p.relative_to(DOCS)) for p in pages()}
    assert on_disk - in_nav == set(), "pages missing from mkdocs.yml's nav"
    assert in_nav - on_disk == set(), "nav entries without a page"
