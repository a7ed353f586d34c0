"""The 2x2 interaction table: when four arms form a factorial (baseline, change A only, change B only,
both), is the combined arm what the two single effects add up to?

additive prediction = baseline + (A only - baseline) + (B only - baseline)
gap (interaction)   = both - additive prediction = both - A only - B only + baseline

The gap is a mean over requests of a per-request contrast (paired: all four arms answered the same
requests), between -2 and 2; its interval is the paired score interval (``paired_score.py``) of half the
contrast, doubled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from tasks.stats.estimate import CONFIDENCE, Interval
from tasks.stats.paired_score import paired_score_interval


@dataclass(frozen=True)
class Factorial:
    """Four arms that form a 2x2: ``first`` and ``second`` each change one respect of ``baseline``;
    ``both`` changes the two, as they do."""

    baseline: str
    first: str
    second: str
    both: str
    first_respect: str
    second_respect: str


def find_factorials(arms: Sequence[Mapping[str, object]],
                    respects: Sequence[str] = ("catalogue_hash", "prompt_hash", "model_id", "selector",
                                               "taskset_version")) -> list[Factorial]:
    """Every 2x2 among ``arms`` (records with the respect columns of the ``arms`` table), each square once,
    its baseline the first arm (in the order given) from which the square is seen."""
    def key(arm: Mapping[str, object]) -> tuple:
        return tuple(arm[r] for r in respects)

    by_key = {key(a): str(a["arm"]) for a in arms}
    order = {str(a["arm"]): i for i, a in enumerate(arms)}
    found: list[Factorial] = []
    seen: set[frozenset[str]] = set()
    for base in arms:
        b = key(base)
        for i, ri in enumerate(respects):
            for j in range(i + 1, len(respects)):
                rj = respects[j]
                firsts = [a for a in arms if _differs_only(b, key(a), {i})]
                seconds = [a for a in arms if _differs_only(b, key(a), {j})]
                for first in firsts:
                    for second in seconds:
                        both_key = tuple(key(first)[n] if n == i else key(second)[n] if n == j else b[n]
                                         for n in range(len(respects)))
                        square = frozenset({str(base["arm"]), str(first["arm"]), str(second["arm"]),
                                            by_key.get(both_key, "")})
                        if both_key in by_key and square not in seen:
                            seen.add(square)
                            one, two, ra, rb = first, second, ri, rj
                            if order[str(one["arm"])] > order[str(two["arm"])]:  # single changes in arm order
                                one, two, ra, rb = two, one, rj, ri
                            found.append(Factorial(str(base["arm"]), str(one["arm"]), str(two["arm"]),
                                                   by_key[both_key], ra, rb))
    return found


def _differs_only(a: tuple, b: tuple, positions: set[int]) -> bool:
    return all((x != y) == (n in positions) for n, (x, y) in enumerate(zip(a, b)))


@dataclass(frozen=True)
class InteractionTable:
    baseline: float
    first: float
    second: float
    both: float
    first_effect: float
    second_effect: float
    additive_prediction: float
    gap: Interval
    """both - additive prediction, with a paired score interval over requests."""
    n_requests: int


def interaction_table(correct: Sequence[Sequence[float]], trials: Sequence[Sequence[float]],
                      confidence: float = CONFIDENCE) -> InteractionTable:
    """``correct[a][i]`` / ``trials[a][i]`` for arm a in (baseline, first, second, both) and request i."""
    k = [[float(x) for x in arm] for arm in correct]
    m = [[float(x) for x in arm] for arm in trials]
    n = len(k[0])
    acc = [sum(k[a]) / sum(m[a]) for a in range(4)]
    prediction = acc[1] + acc[2] - acc[0]
    gap = acc[3] - prediction
    sign = (1.0, -1.0, -1.0, 1.0)  # baseline - first - second + both
    mean_m = [sum(m[a]) / n for a in range(4)]
    halves = [sum(sign[a] * k[a][i] / mean_m[a] for a in range(4)) / 2 for i in range(n)]
    residuals = [sum(sign[a] * (k[a][i] - acc[a] * m[a][i]) / mean_m[a] for a in range(4)) / 2 for i in range(n)]
    half = paired_score_interval(halves, residuals, min(mean_m), confidence)
    interval = Interval(gap, min(gap, 2 * half.low), max(gap, 2 * half.high), "paired score (Tango) on half the gap")
    return InteractionTable(baseline=acc[0], first=acc[1], second=acc[2], both=acc[3],
                            first_effect=acc[1] - acc[0], second_effect=acc[2] - acc[0],
                            additive_prediction=prediction, gap=interval, n_requests=n)
