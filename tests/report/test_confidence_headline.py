"""The report's first screen says, for every arm that gives a confidence, its ECE beside the ECE a perfectly
calibrated router would stay under at this number of requests (simulated), whether that is more than noise,
and for an offline router what fits it (tasks/selection/confidence_headline.py)."""

from __future__ import annotations

from tasks.report.render import render_text
from tasks.selection.tables import build_report
from tests.factories.rows import RUN, KnownRun, selection_row

FIRST_SCREEN = 24


def confident(arm: str, rung: int, n: int, right_every: int, confidence: float, selector: str) -> list[dict]:
    """``n`` requests, every ``right_every``-th one wrong, each at ``confidence``."""
    return [selection_row(f"q{i}", "refund", i % right_every != 0, arm=arm, rung=rung, confidence=confidence,
                          selector=selector) for i in range(n)]


def report_text(width: int = 80) -> str:
    run = KnownRun(arms=("bm25", "hosted"), seeds=1)
    run.add(confident("bm25", 1, 200, 2, 0.97, "lexical"))  # right half the time at 0.97: far off
    run.add(confident("hosted", 2, 200, 10, 0.9, "openai"))  # right 90% at 0.9: calibrated
    run.arm_respects("bm25", selector="lexical").arm_respects("hosted", selector="openai")
    return render_text(build_report(run.finish(), RUN), width=width)


def test_the_first_screen_gives_each_arms_ece_beside_its_noise_floor():
    text = report_text()
    first = text.splitlines()[:FIRST_SCREEN]
    screen = "\n".join(first)
    assert "simulated" in screen
    bm25 = next(line for line in first if line.lstrip().startswith("1. bm25"))
    assert "ECE 0.470" in bm25 and "calibrated <" in bm25 and "miscalibrated" in screen
    assert "tooleval fit" in screen  # the offline router is told what fits its temperature
    hosted = next(line for line in first if line.lstrip().startswith("2. hosted"))
    assert "ECE 0.000" in hosted and "within its noise" in hosted
    assert all(len(line) <= 80 for line in text.splitlines())


def test_a_run_without_confidences_has_no_such_line():
    run = KnownRun(arms=("a",), seeds=1)
    run.add([selection_row(f"q{i}", "refund", True, arm="a") for i in range(5)])
    assert "ECE" not in "\n".join(render_text(build_report(run.finish(), RUN), width=80).splitlines()[:FIRST_SCREEN])


def test_an_arm_whose_fit_was_made_on_another_version_says_so_on_the_first_screen():
    run = KnownRun(arms=("bm25", "embedding"), seeds=1)
    run.add(confident("bm25", 1, 200, 10, 0.9, "lexical")).add(confident("embedding", 2, 200, 10, 0.9, "embedding"))
    elsewhere = "fitted cutoffs/a.json (sha256 aaaaaaaaaaaa; fitted on support v1, hash 0123456789ab): 0.3"
    here = "fitted cutoffs/b.json (sha256 bbbbbbbbbbbb; fitted on known v1, hash 111111111111): 0.3"
    run.arm_respects("bm25", selector="lexical", abstain_rule=elsewhere, taskset_hash="1111111111112222")
    run.arm_respects("embedding", selector="embedding", abstain_rule=here, taskset_hash="1111111111112222")
    first = render_text(build_report(run.finish(), RUN), width=80).splitlines()[:FIRST_SCREEN]
    screen = "\n".join(first)
    assert "1. bm25: its cut-off and temperature were fitted on support v1, not on this" in screen
    assert "2. embedding: its cut-off" not in screen
