"""Paired comparison of two arms on the same requests: the change, its score interval and the test it inverts.

The unit is the request (the cluster); its seeds are repeated measurements of it, never votes. Within an arm
a request's seeds are correlated (a deterministic router gives the same answer under every seed), so counting
(request, seed) pairs as independent would multiply the evidence by the number of seeds. Hence:

- the *change* is the row-level accuracy difference (what the accuracy tables show), with a 95% paired
  score interval over requests that uses every seed of every request (Tango's interval on counts adjusted
  by the design effect: ``paired_score.py``);
- the *p-value* is the score test that interval inverts, at a change of 0: p < 0.05 exactly when the
  interval excludes 0, so a reading (▼ drop, ▲ gain, could be chance) follows from the interval printed
  beside it and nothing can contradict it;
- ``worse`` / ``better`` describe the requests that carry the change: right on fewer of their seeds after
  than before / on more (with one seed, or a deterministic router, the usual discordant counts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from tasks.stats.estimate import CONFIDENCE, Interval
from tasks.stats.paired_score import paired_score_test

SIGNIFICANCE = 0.05
"""Level of the score test printed beside every change (1 - the intervals' confidence)."""

__all__ = ["PairedComparison", "paired_comparison", "paired_change_interval", "SIGNIFICANCE"]


def _paired_test(ka: list[float], ma: list[float], kb: list[float], mb: list[float],
                 confidence: float) -> tuple[Interval, float]:
    """The change ``sum k_to / sum m_to - sum k_from / sum m_from`` with its score interval and p-value.

    Each request contributes ``d_i = k_to_i / mean(m_to) - k_from_i / mean(m_from)`` (the change is their
    mean) and the ratio estimator's linearised residual for the variance."""
    n = len(ka)
    if n == 0 or sum(ma) <= 0 or sum(mb) <= 0:
        return Interval(float("nan"), float("nan"), float("nan"), "paired score (Tango)"), 1.0
    mean_a, mean_b = sum(ma) / n, sum(mb) / n
    pa, pb = sum(ka) / sum(ma), sum(kb) / sum(mb)
    contrasts = [kb[i] / mean_b - ka[i] / mean_a for i in range(n)]
    residuals = [(kb[i] - pb * mb[i]) / mean_b - (ka[i] - pa * ma[i]) / mean_a for i in range(n)]
    interval, p = paired_score_test(contrasts, residuals, min(mean_a, mean_b), confidence)
    return Interval(pb - pa, min(interval.low, pb - pa), max(interval.high, pb - pa), interval.method,
                    interval.n_effective), p


def _floats(*columns: Sequence[float]) -> list[list[float]]:
    return [[float(x) for x in column] for column in columns]


def paired_change_interval(correct_from: Sequence[float], trials_from: Sequence[float],
                           correct_to: Sequence[float], trials_to: Sequence[float],
                           confidence: float = CONFIDENCE) -> Interval:
    """Score interval of the row-level change ``sum k_to / sum m_to - sum k_from / sum m_from``."""
    return _paired_test(*_floats(correct_from, trials_from, correct_to, trials_to), confidence)[0]


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
    """accuracy_to - accuracy_from (row level), with its paired score interval over every seed of every request."""
    both_right: int
    """Requests right under every seed in both arms."""
    worse: int
    """Requests right on fewer of their seeds after than before."""
    better: int
    """Requests right on more of their seeds after than before."""
    both_wrong: int
    """Requests whose share of right seeds did not move and that are not right under every seed."""
    p_value: float
    """Two-sided p-value of the score test the interval inverts, at a change of 0 (< 0.05 exactly when the
    interval excludes 0)."""

    @property
    def discordant(self) -> int:
        return self.worse + self.better

    @property
    def significant(self) -> bool:
        """The 95% interval excludes 0 (the same as p < 0.05: one test, not two); never for an interval with no
        data behind it (NaN)."""
        return self.change.low > 0 or self.change.high < 0


def paired_comparison(correct_from: Sequence[float], trials_from: Sequence[float],
                      correct_to: Sequence[float], trials_to: Sequence[float],
                      confidence: float = CONFIDENCE) -> PairedComparison:
    """Compare two arms request by request (index i is the same request in both arms)."""
    ka, ma, kb, mb = _floats(correct_from, trials_from, correct_to, trials_to)
    if not (len(ka) == len(ma) == len(kb) == len(mb)):
        raise ValueError("paired arrays must have one entry per request in both arms")
    n = len(ka)
    acc_a = sum(ka) / sum(ma) if n and sum(ma) else float("nan")
    acc_b = sum(kb) / sum(mb) if n and sum(mb) else float("nan")
    change, p = _paired_test(ka, ma, kb, mb, confidence)
    share_a = [k / m if m else 0.0 for k, m in zip(ka, ma)]
    share_b = [k / m if m else 0.0 for k, m in zip(kb, mb)]
    worse = sum(b < a - 1e-12 for a, b in zip(share_a, share_b))
    better = sum(b > a + 1e-12 for a, b in zip(share_a, share_b))
    both_right = sum(a >= 1 - 1e-12 and b >= 1 - 1e-12 for a, b in zip(share_a, share_b))
    return PairedComparison(
        n_requests=n, rows_from=int(sum(ma)), rows_to=int(sum(mb)), correct_from=int(sum(ka)),
        correct_to=int(sum(kb)), accuracy_from=acc_a, accuracy_to=acc_b, change=change,
        both_right=both_right, worse=worse, better=better, both_wrong=n - both_right - worse - better,
        p_value=p,
    )
