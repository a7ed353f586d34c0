"""How far a trained arm's requests are from its examples: the rows' nearest_example_cos,
the far_from_examples view (warehouse/views/far_from_examples.sql) against the arm's far cut-off, the report's
table and headline sentence; a run without such arms gets neither."""

from __future__ import annotations

import pytest

from tasks.report.render import render_text
from tasks.selection.example_distance import FAR_SHARE_HIGH
from tasks.selection.tables import build_report
from tests.factories.rows import RUN, KnownRun, records, selection_row

SENTENCE = "of requests are far from every example the model learned from: it is out of its domain; read its figures as a cosine/BM25 router's"


def rows(arm: str, rung: int, nearest: list[float | None], seeds: int = 2) -> list[dict]:
    return [{**selection_row(f"q{i}", "refund", True, arm=arm, rung=rung, seed=seed), "nearest_example_cos": cos}
            for i, cos in enumerate(nearest) for seed in range(1, seeds + 1)]


def known(trained_nearest: list[float | None], cutoff: float | None = 0.4):
    run = KnownRun(arms=("bm25", "trained", "trained-old"), seeds=2)
    run.add(rows("bm25", 1, [None] * 4))
    run.add(rows("trained", 2, trained_nearest))
    run.add(rows("trained-old", 3, [0.9, 0.1, 0.1, 0.1]))  # a model file without a cut-off
    run.arm_respects("trained", selector="trained", far_cutoff=cutoff)
    run.arm_respects("trained-old", selector="trained")
    return run.finish()


def test_the_view_counts_each_request_once_against_its_arms_cut_off():
    con = known([0.2, 0.3, 0.5, 0.6])
    result = {r["arm"]: r for r in records(con, "select * from far_from_examples where run_id = ?", [RUN])}
    assert set(result) == {"trained", "trained-old"}  # the BM25 arm records no nearest example
    trained = result["trained"]
    assert (trained["n_requests"], trained["n_far"], trained["far_cutoff"]) == (4, 2, pytest.approx(0.4))
    assert trained["far_share"] == pytest.approx(0.5)
    assert trained["nearest_median"] == pytest.approx(0.4)
    old = result["trained-old"]
    assert old["n_requests"] == 4 and old["n_far"] is None and old["far_share"] is None


def test_the_report_says_an_arm_is_out_of_its_domain_when_many_requests_are_far():
    text = render_text(build_report(known([0.2, 0.3, 0.5, 0.6]), RUN), width=200)
    assert f"2. trained: 50.0% {SENTENCE}" in text
    assert f"3. trained-old: 75.0%" not in text and "— (the model file records no cut-off" in text  # no claim
    assert "How far the requests are from the trained model's examples" in text
    assert "50.0% (2 of 4)" in text


def test_a_trained_arm_in_its_domain_gets_the_table_but_no_sentence():
    share = 1 / 8
    assert share < FAR_SHARE_HIGH
    text = render_text(build_report(known([0.2] + [0.9] * 7), RUN), width=200)
    assert "12.5% (1 of 8)" in text and SENTENCE not in text


def test_a_run_without_trained_arms_has_neither_table_nor_line():
    run = KnownRun(arms=("bm25", "embedding"), seeds=2)
    run.add(rows("bm25", 1, [None] * 4)).add(rows("embedding", 2, [None] * 4))
    report = build_report(run.finish(), RUN)
    assert "far_from_examples" not in [t.key for t in report.tables]
    assert "far from every example" not in render_text(report, width=200)
