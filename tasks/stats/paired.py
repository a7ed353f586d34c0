"""Paired comparison of two arms on the same requests: discordant counts, exact McNemar, the change and
its score interval.

The unit is the request. Within an arm a request's seeds are correlated (a deterministic router gives
the same answer under every seed), so counting (request, seed) pairs as independent would multiply the
evidence by the number of seeds. Hence:

- the *change* is the row-level accuracy difference (what the accuracy tables show), with a 95% paired
  score interval over requests (Tango's, generalised to seeds that disagree: ``paired_score.py``);
- the *test* is an exact McNemar (binomial) test on requests whose majority verdict differs: a request
  counts as right in an arm when it is right under more than half of its seeds. ``worse`` = right
  before, wrong after; ``better`` = wrong before, right after;
- the two never contradict each other: when the exact test cannot reject at 5%, the interval is
  widened to reach 0 (e.g. 4 worse / 0 better of 24: the score interval alone is -35.9 to -0.6 points,
  while p = 0.125; the report prints -35.9 to 0). ``score_interval`` keeps the interval before that
  widening, for combining tools into weighted figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from tasks.stats.distributions import exact_mcnemar
from tasks.stats.estimate import CONFIDENCE, Interval
from tasks.stats.paired_score import paired_score_interval

SIGNIFICANCE = 0.05
"""Level of the exact McNemar test the report prints beside every change."""

__all__ = ["PairedComparison", "paired_comparison", "paired_change_interval", "majority_right", "exact_mcnemar",
           "inside_noise_floor", "SIGNIFICANCE"]


def majority_right(correct: Sequence[float], trials: Sequence[float]) -> list[bool]:
    """A request is right when it is right under more than half of its seeds."""
    return [float(k) * 2 > float(m) for k, m in zip(correct, trials)]


def paired_change_interval(correct_from: Sequence[float], trials_from: Sequence[float],
                           correct_to: Sequence[float], trials_to: Sequence[float],
                           confidence: float = CONFIDENCE) -> Interval:
    """Score interval of the row-level change ``sum k_to / sum m_to - sum k_from / sum m_from``.

    Each request contributes ``d_i = k_to_i / mean(m_to) - k_from_i / mean(m_from)`` (the change is
    their mean) and the ratio estimator's linearised residual for the variance."""
    ka, ma = [float(x) for x in correct_from], [float(x) for x in trials_from]
    kb, mb = [float(x) for x in correct_to], [float(x) for x in trials_to]
    n = len(ka)
    if n == 0 or sum(ma) <= 0 or sum(mb) <= 0:
        return Interval(float("nan"), float("nan"), float("nan"), "paired score (Tango)")
    mean_a, mean_b = sum(ma) / n, sum(mb) / n
    pa, pb = sum(ka) / sum(ma), sum(kb) / sum(mb)
    contrasts = [kb[i] / mean_b - ka[i] / mean_a for i in range(n)]
    residuals = [(kb[i] - pb * mb[i]) / mean_b - (ka[i] - pa * ma[i]) / mean_a for i in range(n)]
    interval = paired_score_interval(contrasts, residuals, min(mean_a, mean_b), confidence)
    return Interval(pb - pa, min(interval.low, pb - pa), max(interval.high, pb - pa), interval.method,
                    interval.n_effective)


@dataclass(frozen=True)
class PairedComparison:
    """Two arms on the requests both answered (aligned arrays, one entry per request)."""

    n_requests: int
    rows_from: int
    rows_to: int
    correct_from: int
    correct_to: int
    accuracy_from: float
    accuracy_to: float
    change: Interval
    """accuracy_to - accuracy_from (row level), with its paired score interval (reaching 0 when the exact
    test cannot reject)."""
    both_right: int
    worse: int
    """Requests right (by majority of seeds) before and wrong after."""
    better: int
    """Requests wrong before and right after."""
    both_wrong: int
    p_value: float
    """Exact McNemar on ``worse`` vs ``better``."""
    score_interval: Interval | None = None
    """The score interval before it was widened to reach 0 (the same as ``change`` when it was not)."""

    @property
    def discordant(self) -> int:
        return self.worse + self.better


def paired_comparison(correct_from: Sequence[float], trials_from: Sequence[float],
                      correct_to: Sequence[float], trials_to: Sequence[float],
                      confidence: float = CONFIDENCE) -> PairedComparison:
    """Compare two arms request by request (index i is the same request in both arms)."""
    ka, ma = [float(x) for x in correct_from], [float(x) for x in trials_from]
    kb, mb = [float(x) for x in correct_to], [float(x) for x in trials_to]
    if not (len(ka) == len(ma) == len(kb) == len(mb)):
        raise ValueError("paired arrays must have one entry per request in both arms")
    n = len(ka)
    acc_a = sum(ka) / sum(ma) if n and sum(ma) else float("nan")
    acc_b = sum(kb) / sum(mb) if n and sum(mb) else float("nan")
    score = paired_change_interval(ka, ma, kb, mb, confidence)
    right_a, right_b = majority_right(ka, ma), majority_right(kb, mb)
    worse = sum(a and not b for a, b in zip(right_a, right_b))
    better = sum(b and not a for a, b in zip(right_a, right_b))
    both_right = sum(a and b for a, b in zip(right_a, right_b))
    p = exact_mcnemar(worse, better)
    change = score
    if n and p >= 1 - confidence and not score.low <= 0 <= score.high:
        change = Interval(score.estimate, min(score.low, 0.0), max(score.high, 0.0),
                          f"{score.method}, widened to 0: exact McNemar p >= {1 - confidence:.2g}",
                          score.n_effective)
    return PairedComparison(
        n_requests=n, rows_from=int(sum(ma)), rows_to=int(sum(mb)), correct_from=int(sum(ka)),
        correct_to=int(sum(kb)), accuracy_from=acc_a, accuracy_to=acc_b, change=change,
        both_right=both_right, worse=worse, better=better, both_wrong=n - both_right - worse - better,
        p_value=p, score_interval=score,
    )


def inside_noise_floor(change: float, spread_from: float, spread_to: float) -> bool:
    """A change no larger than the seed spread of either arm is inside the noise floor (reported as nothing)."""
    floor = max(spread_from or 0.0, spread_to or 0.0)
    return floor > 0 and abs(change) <= floor + 1e-12
