"""Paired comparison of two arms on the same requests: discordant counts, exact McNemar, clustered delta.

The unit is the request. Within an arm a request's seeds are correlated (a deterministic router gives
the same answer under every seed), so counting (request, seed) pairs as independent would multiply the
evidence by the number of seeds. Hence:

- the *change* is the row-level accuracy difference (what the accuracy tables show), with a 95%
  interval from a bootstrap over whole requests, both arms resampled together (paired);
- the *test* is an exact McNemar (binomial) test on requests whose majority verdict differs: a request
  counts as right in an arm when it is right under more than half of its seeds. ``worse`` = right
  before, wrong after; ``better`` = wrong before, right after.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from statsmodels.stats.contingency_tables import mcnemar

from tasks.stats.intervals import RESAMPLES, BOOTSTRAP_SEED, Interval, cluster_bootstrap


def exact_mcnemar(worse: int, better: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (1.0 when none is discordant)."""
    if worse + better == 0:
        return 1.0
    result = mcnemar([[0, worse], [better, 0]], exact=True)
    return float(min(1.0, result.pvalue))


def majority_right(correct: Sequence[float], trials: Sequence[float]) -> np.ndarray:
    """A request is right when it is right under more than half of its seeds."""
    return np.asarray(correct, dtype=float) * 2 > np.asarray(trials, dtype=float)


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
    """accuracy_to - accuracy_from (row level), with a paired request-bootstrap interval."""
    both_right: int
    worse: int
    """Requests right (by majority of seeds) before and wrong after."""
    better: int
    """Requests wrong before and right after."""
    both_wrong: int
    p_value: float
    """Exact McNemar on ``worse`` vs ``better``."""

    @property
    def discordant(self) -> int:
        return self.worse + self.better


def paired_comparison(correct_from: Sequence[float], trials_from: Sequence[float],
                      correct_to: Sequence[float], trials_to: Sequence[float],
                      resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED) -> PairedComparison:
    """Compare two arms request by request (index i is the same request in both arms)."""
    ka, ma = np.asarray(correct_from, dtype=float), np.asarray(trials_from, dtype=float)
    kb, mb = np.asarray(correct_to, dtype=float), np.asarray(trials_to, dtype=float)
    if not (len(ka) == len(ma) == len(kb) == len(mb)):
        raise ValueError("paired arrays must have one entry per request in both arms")
    n = len(ka)
    acc_a = float(ka.sum() / ma.sum()) if n else float("nan")
    acc_b = float(kb.sum() / mb.sum()) if n else float("nan")
    estimate = acc_b - acc_a
    if n:
        change = cluster_bootstrap(lambda w, ka_, ma_, kb_, mb_: (w @ kb_) / (w @ mb_) - (w @ ka_) / (w @ ma_),
                                   [ka, ma, kb, mb], estimate, resamples, seed)
    else:
        change = Interval(estimate, float("nan"), float("nan"), "cluster bootstrap")
    right_a, right_b = majority_right(ka, ma), majority_right(kb, mb)
    worse = int((right_a & ~right_b).sum())
    better = int((~right_a & right_b).sum())
    return PairedComparison(
        n_requests=n, rows_from=int(ma.sum()), rows_to=int(mb.sum()), correct_from=int(ka.sum()),
        correct_to=int(kb.sum()), accuracy_from=acc_a, accuracy_to=acc_b,
        change=change, both_right=int((right_a & right_b).sum()), worse=worse, better=better,
        both_wrong=int((~right_a & ~right_b).sum()), p_value=exact_mcnemar(worse, better),
    )


def inside_noise_floor(change: float, spread_from: float, spread_to: float) -> bool:
    """A change no larger than the seed spread of either arm is inside the noise floor (reported as nothing)."""
    floor = max(spread_from or 0.0, spread_to or 0.0)
    return floor > 0 and abs(change) <= floor + 1e-12
