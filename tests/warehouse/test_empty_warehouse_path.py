"""An empty --warehouse is bad input (exit 2, naming the flag) for every command that takes it, never "not
given" (the run landed in the checkout's default warehouse)."""

from __future__ import annotations

import argparse

import pytest

from flows import api
from flows.cli import build_parser, main
from tasks.files.input_errors import InputError
from warehouse.location import DEFAULT_DIR, warehouse_at


def _commands_with_warehouse(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands_with_warehouse(sub, prefix + (name,))
        elif "--warehouse" in action.option_strings:
            found.append(prefix)
    return found


COMMANDS = _commands_with_warehouse(build_parser())


def test_the_commands_that_take_a_warehouse_are_found():
    assert {("run",), ("tasks", "run"), ("report",), ("tasks", "report"), ("compare",), ("sql",),
            ("register",)} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_warehouse_is_bad_input_naming_the_flag(command, empty, capsys):
    before = sorted(p.name for p in DEFAULT_DIR.iterdir())
    with pytest.raises(SystemExit) as stopped:
        main([*command, "--warehouse", empty, "a", "b"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "--warehouse" in err and "empty path" in err
    assert sorted(p.name for p in DEFAULT_DIR.iterdir()) == before


def test_the_api_refuses_an_empty_warehouse_too():
    with pytest.raises(InputError, match="--warehouse.*empty path"):
        warehouse_at("")
    with pytest.raises(InputError, match="empty path"):
        api.report("run-x", "")
    assert warehouse_at(None).root == DEFAULT_DIR or warehouse_at(None).root.is_absolute()
