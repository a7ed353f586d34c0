"""find_factorials sees every 2x2 of a baseline, also when the baseline starts two squares."""

from __future__ import annotations

from tasks.stats.interaction import find_factorials

RESPECTS = ("catalogue_hash", "prompt_hash", "model_id")


def arm(name: str, catalogue: str, prompt: str, model: str) -> dict:
    return {"arm": name, "catalogue_hash": catalogue, "prompt_hash": prompt, "model_id": model}


def test_a_baseline_with_two_squares_yields_both():
    arms = [arm("A", "c0", "p0", "m0"), arm("B", "c0", "p1", "m0"), arm("C", "c1", "p0", "m0"),
            arm("D", "c1", "p1", "m0"), arm("E", "c0", "p0", "m1"), arm("F", "c1", "p0", "m1")]
    squares = {(f.baseline, f.first, f.second, f.both) for f in find_factorials(arms, RESPECTS)}
    assert ("A", "B", "C", "D") in squares  # prompt x catalogue
    assert ("A", "C", "E", "F") in squares  # catalogue x model
