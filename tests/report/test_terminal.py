"""The terminal the reports print to (tasks/report/terminal.py): the same words with or without colour, ANSI codes
only for a terminal that wants them, a word's style inside a line's style."""

from __future__ import annotations

import io

import pytest

from tasks.report.terminal import Terminal, colour_wanted, styled, word_spans


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_line_is_written_as_it_is_without_colour():
    out = io.StringIO()
    Terminal(file=out, width=80, colour=False).print("[x] ▼ drop in refund_order", "bold", [(0, 3, "red")])
    assert out.getvalue() == "[x] ▼ drop in refund_order\n"  # no markup read into the brackets, no codes


def test_a_styled_line_carries_the_codes_of_its_style_and_of_each_span():
    assert styled("PASS all", "bold green") == "\x1b[1;32mPASS all\x1b[0m"
    assert styled("", "bold") == ""
    assert styled("plain") == "plain"
    line = "refund_order  ▼ drop  -12.0"
    spans = word_spans(line, {"▼ drop": "red"})
    assert spans == [(14, 20, "red")]
    assert styled(line, "", spans) == "refund_order  \x1b[31m▼ drop\x1b[0m  -12.0"
    assert styled(line, "dim", spans) == ("\x1b[2mrefund_order  \x1b[0m\x1b[2;31m▼ drop\x1b[0m"
                                          "\x1b[2m  -12.0\x1b[0m")


def test_every_occurrence_of_a_word_is_styled():
    assert word_spans("▲ gain, ▲ gain", {"▲ gain": "green"}) == [(0, 6, "green"), (8, 14, "green")]


@pytest.mark.parametrize(("env", "tty", "wanted"), [
    ({}, True, True), ({}, False, False), ({"NO_COLOR": "1"}, True, False), ({"TERM": "dumb"}, True, False),
    ({"FORCE_COLOR": "1"}, False, True), ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False)])
def test_colour_for_a_terminal_unless_asked_otherwise(monkeypatch, env, tty, wanted):
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert colour_wanted(FakeTty() if tty else io.StringIO()) is wanted


def test_the_width_is_columns_when_set(monkeypatch):
    monkeypatch.setenv("COLUMNS", "72")
    assert Terminal(file=io.StringIO()).width == 72
    assert Terminal(file=io.StringIO(), width=120).width == 120
