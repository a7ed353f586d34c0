"""The terminal report at 60, 80 and 200 columns: no line wider than the width, and every figure of every
table (and of the gates' evidence) printed whole, also beside long BFCL-style tool names; ``COLUMNS`` is
respected when stdout is not a terminal. The task report (tooleval tasks) shares the layout."""

from __future__ import annotations

from functools import partial

import io
import re

import pytest
from tasks.report.terminal import Terminal

from schemas.selection.criteria import SelectionCriteria
from tasks.selection.figures import load_figures
from tasks.report.render import _numeric, render_terminal, terminal_width
from tasks.selection.tables import build_report_from
from tasks.report.text_table import wrap_text
from tasks.report.render import render_text
from tasks.report_types import Report, ReportTable
from tests.factories.rows import KnownRun, selection_row, tool_rows
from tasks.report.judge import judge as judge_with  # noqa: E402
from tasks.selection.gates import JUDGES  # noqa: E402

judge = partial(judge_with, judges=JUDGES)

LONG = ["requests.get_weather_forecast_by_city_name_and_country_code",
        "math_toolkit.calculate_triangle_area_from_base_and_height", "get_current_weather"]
WEIGHTS = {LONG[0]: 0.45, LONG[1]: 0.35, LONG[2]: 0.20}
ARMS = ["bfcl-base-live-multiple", "bfcl-namespaced-live-multiple", "bfcl-merged-descriptions",
        "bfcl-rewritten-descriptions"]
WIDTHS = (60, 80, 200)
FIGURE = re.compile(r"[-+<]?\d[\d,.]*(?:%|×\d+)?")


def with_arguments(rows: list[dict]) -> list[dict]:
    """The right calls' arguments scored: every fifth wrong in a long-named parameter (the argument tables)."""
    for k, row in enumerate(r for r in rows if r["correct"]):
        outcome = "wrong_value" if k % 5 == 0 else "right"
        row.update(arguments_correct=outcome == "right", argument_outcomes=[
            {"parameter": "base_length_in_centimetres_of_the_triangle", "outcome": outcome}])
    return rows


@pytest.fixture(scope="module")
def report():
    run = KnownRun(arms=ARMS, comparisons=list(zip(ARMS, ARMS[1:])), weights=WEIGHTS, seeds=3)
    patterns = {ARMS[0]: [3] * 14, ARMS[1]: [3] * 7 + [1] * 4 + [0] * 3, ARMS[2]: [2] * 14, ARMS[3]: [0] * 9 + [3] * 5}
    for rung, arm in enumerate(ARMS, start=1):
        run.add(tool_rows(LONG[0], 14, patterns[arm], seeds=3, arm=arm, rung=rung))
        run.add(with_arguments(tool_rows(LONG[1], 51, [3] * 48 + [0] * 3, seeds=3, arm=arm, rung=rung)))
        run.add(tool_rows(LONG[2], 9, [3] * 5 + [0] * 4, seeds=3, arm=arm, rung=rung))
        run.add([selection_row(f"none-{i}", "none", i % 3 == 0, arm=arm, rung=rung, seed=s, slice_="irrelevance")
                 for i in range(12) for s in (1, 2, 3)])
    criteria = SelectionCriteria.model_validate({"name": "t", "gates": [
        {"name": "busy-tools-hold", "kind": "tool_drop", "min_volume_share": 0.03, "max_drop_points": 10},
        {"name": "weighted-floor", "kind": "weighted_floor", "min_accuracy": 0.9},
    ]})
    figures = load_figures(run.finish(), "run1")
    return build_report_from(figures, judge(figures, criteria))


def rendered(report, width: int) -> str:
    buffer = io.StringIO()
    render_terminal(report, Terminal(file=buffer, width=width, colour=False))
    return buffer.getvalue()


@pytest.mark.parametrize("width", WIDTHS)
def test_no_line_is_wider_than_the_terminal(report, width):
    text = rendered(report, width)
    too_wide = [line for line in text.splitlines() if len(line) > width]
    assert too_wide == []


@pytest.mark.parametrize("width", WIDTHS)
def test_every_figure_of_every_table_appears_whole(report, width):
    lines = rendered(report, width).splitlines()
    text = "\n".join(lines)
    checked = 0
    for table in report.tables:
        for i, column in enumerate(table.columns):
            cells = [row[i] for row in table.rows if i < len(row)]
            if not (i > 0 and _numeric(cells)):
                continue
            for cell in cells:
                for part in cell.split("\n"):  # a figure cell's line is never wrapped or cut
                    if part.strip():
                        assert any(part in line for line in lines), (table.title, column, part, width)
                        checked += 1
        for row in table.rows:  # figures inside text cells (names, readings) stay whole too
            for cell in row:
                for figure in FIGURE.findall(cell):
                    assert figure in text, (table.title, figure, width)
    assert checked > 200


@pytest.mark.parametrize("width", WIDTHS)
def test_the_gates_evidence_keeps_its_figures_whole(report, width):
    words = set(rendered(report, width).split())
    for gate in report.verdict.gates:
        for line in gate.evidence:
            for token in line.split():
                if FIGURE.search(token):
                    assert token in words, (gate.name, token, width)


def test_long_tool_names_wrap_at_their_separators_and_read_back_whole(report):
    text = rendered(report, 60)
    assert LONG[0] not in text  # too long for a 60-column table beside its figures: wrapped
    pieces = wrap_text(LONG[0], 16)
    assert pieces[0].endswith(("_", ".")) and "".join(pieces) == LONG[0]
    assert LONG[0] in rendered(report, 200)


def test_columns_is_respected_when_stdout_is_not_a_terminal(monkeypatch):
    monkeypatch.setattr("sys.stdout", io.StringIO())  # not a terminal
    monkeypatch.setenv("COLUMNS", "72")
    assert terminal_width() == 72
    monkeypatch.setenv("COLUMNS", "40")
    assert terminal_width() == 60  # below 60 the report is laid out at 60 (figures stay whole)
    monkeypatch.delenv("COLUMNS")
    assert terminal_width() == 100


def test_the_task_report_fits_the_width_and_keeps_its_figures(report):
    table = ReportTable("Per-tool counters, arm A-legacy",
                  ["tool", "calls", "invalid", "invalid rate", "errors", "error rate", "retries",
                   "calls/run where it appears"],
                  [[LONG[0], "1,086", "195", "18.0%", "0", "0.0%", "0", "1.45"],
                   ["lookup_article", "33", "33", "100.0%", "0", "0.0%", "0", "1.00"]],
                  note="aggregate invalid rate 195/1,086 = 18.0%, an average over per-tool rates from 0.0% to 100.0%")
    task_report = Report(run_id="r", headline=[], tables=[table])
    natural = render_text(task_report, 10**4)
    assert LONG[0] in natural  # the report file keeps its natural width
    for width in WIDTHS:
        text = render_text(task_report, width)
        assert max(len(line) for line in text.splitlines()) <= width
        words = set(text.split())
        for row in table.rows:
            for cell in row[1:]:
                assert cell in words, (cell, width)
        assert "195/1,086" in words and "100.0%" in words
