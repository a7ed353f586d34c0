"""95% intervals for a proportion and the seed figures beside it: the names the report and the tests use.

- ``wilson_interval``: Wilson's score interval for one count (``wilson.py``);
- ``clustered_wilson_interval`` / ``clustered_wilson_from_sums``: with several seeds, the request is
  the unit: Wilson's interval on an effective number of trials, small-sample corrected (``wilson.py``,
  where the method and its measured coverage are described). The same formula is in the SQL views'
  ``ci_low`` / ``ci_high`` columns, so the views and the report agree;
- changes and weighted figures have score intervals in ``paired_score.py`` / ``paired.py`` /
  ``weighted.py``; nothing here resamples (every interval is closed form: the same rows always give the
  same interval, and no bootstrap runs in the report).

Everything here is plain ``math``: importing it costs milliseconds (no numpy, scipy or statsmodels).
"""

from __future__ import annotations

from typing import Sequence

from tasks.stats.distributions import two_sided_quantile
from tasks.stats.estimate import CONFIDENCE, Interval
from tasks.stats.wilson import (
    clustered_effective_trials,
    clustered_wilson_from_sums,
    clustered_wilson_interval,
    cluster_sums,
    wilson_interval,
)

__all__ = ["CONFIDENCE", "Interval", "z_value", "wilson_interval", "clustered_wilson_interval",
           "clustered_wilson_from_sums", "effective_trials", "seed_spread"]


def z_value(confidence: float = CONFIDENCE) -> float:
    """Two-sided normal quantile: 1.96 for 95%."""
    return two_sided_quantile(confidence)


def effective_trials(correct_per_request: Sequence[float], trials_per_request: Sequence[float]) -> float:
    """The effective number of independent trials behind the clustered interval of a pooled accuracy
    (``n*`` of ``wilson.py``): the number of requests when seeds always agree, up to the rows when they
    are independent."""
    correct, rows, e2, e4 = cluster_sums(correct_per_request, trials_per_request)
    return clustered_effective_trials(correct, rows, e2, e4, len(list(trials_per_request)))


def seed_spread(per_seed: Sequence[float]) -> tuple[float, float, float, float]:
    """(mean, min, max, spread) of per-seed figures; the spread (max - min) is the seed noise floor."""
    values = [float(v) for v in per_seed]
    if not values:
        return (float("nan"),) * 4
    return sum(values) / len(values), min(values), max(values), max(values) - min(values)
