"""The report: verdict first, tables that fit 100 columns without colour, an offline HTML file with its
charts, and a markdown summary for a pull-request comment."""

from __future__ import annotations

from functools import partial

import io
import re
from html.parser import HTMLParser

import duckdb
import pytest
from tasks.report.terminal import Terminal

from schemas.selection.criteria import SelectionCriteria
from tasks.selection.figures import load_figures
from tasks.report.publish import open_read_only, read_report
from tasks.report.render import markdown_document, render_markdown, render_terminal, write_report_files
from tasks.report_types import ReportTable
from tasks.selection.tables import build_report_from
from tests.factories.rows import KnownRun, selection_row, tool_rows
from warehouse.location import Warehouse
from tasks.report.judge import judge as judge_with  # noqa: E402
from tasks.selection.gates import JUDGES  # noqa: E402

judge = partial(judge_with, judges=JUDGES)

WEIGHTS = {"gift_cards": 0.31, "track_shipment": 0.39, "update_shipping_address_and_contact_details": 0.30}


def known_run(path=":memory:") -> KnownRun:
    """Three rungs, two slices, a long tool name, confidences, three seeds that sometimes disagree."""
    run = KnownRun(path, arms=["base-18", "disputes-22", "subscriptions-26"],
                   comparisons=[("base-18", "disputes-22"), ("disputes-22", "subscriptions-26")],
                   weights=WEIGHTS, seeds=3)
    patterns = {"base-18": [3] * 12, "disputes-22": [3] * 6 + [1] * 3 + [0] * 3, "subscriptions-26": [2] * 12}
    for rung, arm in enumerate(patterns, start=1):
        run.add(tool_rows("gift_cards", 12, patterns[arm], seeds=3, arm=arm, rung=rung))
        run.add(tool_rows("track_shipment", 30, [3] * 25 + [0] * 5, seeds=3, arm=arm, rung=rung))
        run.add(tool_rows("update_shipping_address_and_contact_details", 8, [3] * 6 + [0] * 2, seeds=3, arm=arm,
                          rung=rung))
        run.add([selection_row(f"new-{i}", "none" if rung == 1 else "gift_cards", i % 2 == 0, arm=arm, rung=rung,
                               seed=s, slice_="new_tools", expected_position=None if rung == 1 else 1 + (i + s) % 4)
                 for i in range(10) for s in (1, 2, 3)])
    for r in run.rows:
        r["confidence"] = 0.85 if r["correct"] else 0.4
        if r["expected_position"] is not None:
            r["expected_position"] = 1 + (sum(map(ord, r["request_id"])) + r["seed"]) % 4
    return run


@pytest.fixture(scope="module")
def report():
    figures = load_figures(known_run().finish(), "run1")
    criteria = SelectionCriteria.model_validate({"name": "t", "gates": [
        {"name": "busy-tools-hold", "kind": "tool_drop", "min_volume_share": 0.03, "max_drop_points": 10},
        {"name": "router", "kind": "confidence_gap", "min_gap_points": 20},
    ]})
    return build_report_from(figures, judge(figures, criteria))


def plain_terminal(report) -> str:
    buffer = io.StringIO()
    render_terminal(report, Terminal(file=buffer, width=100, colour=False))
    return buffer.getvalue()


def test_the_terminal_report_starts_with_the_verdict_and_fits_100_columns_without_colour(report):
    text = plain_terminal(report)
    assert text.startswith("VERDICT: FAIL")
    assert "✘ FAIL busy-tools-hold" in text and "gift_cards" in text
    assert "\x1b[" not in text  # no colour codes: the words carry the meaning
    widths = [len(line) for line in text.splitlines()]
    assert max(widths) <= 100
    # the long tool name stays on one line
    assert "update_shipping_address_and_contact_details" in text
    for title in ("Accuracy by slice and rung", "Rung-to-rung changes", "Per-tool accuracy, slice existing",
                  "Per-tool changes base-18 → disputes-22", "Top 5 confused pairs", "Volume-weighted accuracy",
                  "Which tools make up the weighted change", "Position effect", "Calibration", "Router threshold",
                  "What this set can resolve"):
        assert title in text, title


def test_small_denominators_show_the_fraction_and_every_proportion_its_interval(report):
    tools = next(t for t in report.tables if t.key == "tools-existing-1")
    gift = next(r for r in tools.rows if r[0] == "gift_cards")
    assert gift[3].startswith("100.0% 36/36\n") and re.search(r"\n\d+\.\d–\d+\.\d", gift[3])
    slices = next(t for t in report.tables if t.key == "slices")
    assert all(re.fullmatch(r"\d+\.\d–\d+\.\d", row[4]) for row in slices.rows)
    assert all(" / " in row[5] for row in slices.rows)  # per-seed figures beside every aggregate


def test_paired_changes_show_discordant_counts_and_the_test(report):
    changes = next(t for t in report.tables if t.key == "tool-changes-base-18-disputes-22-existing")
    gift = next(r for r in changes.rows if r[0] == "gift_cards")
    # p: the score test the interval inverts (below 0.05 exactly when the CI beside it excludes 0)
    assert gift[3] == "-41.7" and gift[5] == "6 / 0" and float(gift[6]) < 0.05 and gift[7] == "▼ drop"
    assert gift[4].split(" to ")[1].startswith("-")  # the CI's upper end is below 0
    # disputes-22 -> subscriptions-26: read from the interval beside it, whatever the seeds' spread
    later = next(t for t in report.tables if t.key == "tool-changes-disputes-22-subscriptions-26-existing")
    row = next(r for r in later.rows if r[0] == "gift_cards")
    assert row[7] == ("could be chance" if float(row[6].lstrip("<")) >= 0.05 else ("▼ drop" if "-" in row[3] else "▲ gain"))


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.sources: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.sources += [v for k, v in attrs if k in ("src", "href") and v]


def test_the_html_report_is_self_contained_and_draws_its_charts(report, tmp_path):
    paths = write_report_files(report, tmp_path)
    html = paths["html"].read_text()
    parser = _Collector()
    parser.feed(html)
    assert "script" not in parser.tags and "link" not in parser.tags and parser.sources == []
    assert "http://" not in html and "https://" not in html
    assert html.index("VERDICT: FAIL") < html.index("<table")
    labels = re.findall(r"<svg role='img' aria-label='([^']+)'", html)
    assert "accuracy by slice across rungs" in labels
    assert "per-tool accuracy, slice existing" in labels
    assert sum(label.startswith("confusion heatmap") for label in labels) == 3
    assert "reliability diagram" in labels
    # whiskers: one interval line per tool x rung in the per-tool chart
    existing = html[html.index("aria-label='per-tool accuracy, slice existing'"):]
    existing = existing[:existing.index("</svg>")]
    assert existing.count("<title>") == 3 * 3


def test_the_markdown_summary_is_a_pull_request_comment(report):
    markdown = render_markdown(report, "/tmp/report.html")
    assert markdown.startswith("## tooleval: ✘ FAIL — run `run1`")
    assert "- **FAIL** busy-tools-hold" in markdown
    assert "**Per-tool drops (paired" in markdown and "| base-18 → disputes-22 | existing | gift_cards |" in markdown
    assert "Per-tool accuracy, slice" not in markdown  # the full tables live in the HTML
    assert markdown.rstrip().endswith("`/tmp/report.html`")


def test_a_warehouse_written_before_the_new_views_still_reports(tmp_path):
    db = tmp_path / "tooleval.duckdb"
    con = known_run(db).finish()
    for view in ("paired_tool_changes", "paired_requests", "position_band_accuracy", "confusion_matrix"):
        con.execute(f"DROP VIEW {view}")
    con.close()
    read_only = open_read_only(db)
    assert read_only.execute("SELECT count(*) FROM confusion_matrix").fetchall()[0][0] > 0
    read_only.close()
    report = read_report(Warehouse(tmp_path), "run1")
    assert report.verdict is not None and report.verdict.status == "NO CRITERIA"
    assert duckdb.connect(str(db), read_only=True).execute(
        "SELECT count(*) FROM duckdb_views() WHERE view_name = 'confusion_matrix'").fetchall()[0][0] == 0


def test_four_arms_forming_a_2x2_get_an_interaction_table():
    run = KnownRun(arms=["base", "prompt", "surface", "both"], comparisons=[("base", "prompt"), ("base", "surface")])
    run.arm_respects("prompt", prompt_hash="p1").arm_respects("surface", catalogue_hash="c1")
    run.arm_respects("both", prompt_hash="p1", catalogue_hash="c1")
    for rung, (arm, right) in enumerate({"base": 60, "prompt": 70, "surface": 65, "both": 90}.items(), start=1):
        run.add(tool_rows("t", 100, [1] * right + [0] * (100 - right), arm=arm, rung=rung))
    report = build_report_from(load_figures(run.finish(), "run1"))
    table = next(t for t in report.tables if t.key == "interaction")
    (row,) = table.rows
    assert row[0] == "base / prompt / surface / both" and row[2] == "60.0%"
    assert row[3] == "+10.0 / +5.0" and row[4] == "75.0%" and row[5] == "90.0%" and row[6].startswith("+15.0 (")
    assert max(len(line) for line in plain_terminal(report).splitlines()) <= 100


def test_a_tool_whose_seeds_disagree_shows_its_spread(report):
    tools = next(t for t in report.tables if t.key == "tools-existing-1")
    gift = next(r for r in tools.rows if r[0] == "gift_cards")
    assert "spread" not in gift[3]  # base-18: the seeds agree
    assert gift[5].endswith("spread 100.0") or "spread" in gift[5]  # subscriptions-26: 2 of 3 seeds right


def test_one_markdown_writer_for_every_table():
    figures = ReportTable(title="Per tool", columns=["tool", "accuracy", "Δ pts"],
                          rows=[["a|b", "80.0%", "-30.0"], ["c", "—", ""]], note="paired")
    listed = ReportTable(title="Label checks", columns=[], rows=[["12 expectations passed"]])
    text = markdown_document("Weekly", ["headline"], [figures, listed])
    assert text.startswith("# Weekly\n\nheadline  \n\n## Per tool\n\n| tool | accuracy | Δ pts |\n|---|---:|---:|\n")
    assert "| a\\|b | 80.0% | -30.0 |" in text and "<sub>paired</sub>" in text  # figures right-aligned, pipes escaped
    assert "## Label checks\n\n- 12 expectations passed\n" in text  # a table without columns is a list


def test_a_warehouse_written_before_the_shared_macros_still_reports(tmp_path):
    db = tmp_path / "tooleval.duckdb"
    con = known_run(db).finish()
    for (view,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall():
        con.execute(f"DROP VIEW {view}")
    for (macro,) in con.execute("SELECT DISTINCT function_name FROM duckdb_functions() "
                                "WHERE function_type = 'macro' AND NOT internal").fetchall():
        con.execute(f"DROP MACRO {macro}")
    con.close()
    read_only = open_read_only(db)  # TEMP macros, then TEMP views
    assert read_only.execute("SELECT count(*) FROM aggregate_accuracy WHERE ci_low > 0").fetchall()[0][0] > 0
    read_only.close()
    report = read_report(Warehouse(tmp_path), "run1")
    assert report.verdict is not None and report.verdict.status == "NO CRITERIA"
