"""How figures are written in every report format: percentages, fractions, points, intervals, p-values.

Percentages on small denominators carry the fraction (23/24) as the reader needs both; intervals are
written low–high in percent; changes in signed points.
"""

from __future__ import annotations

import math

from tasks.stats.intervals import Interval

SMALL_DENOMINATOR = 100
"""Below this many trials a percentage also shows its fraction."""


def pct(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{100 * value:.{digits}f}%"


def pct_with_fraction(correct: int, n: int) -> str:
    """'95.8% (23/24)' on a small denominator, '40.8%' on a large one."""
    share = pct(correct / n if n else None)
    return f"{share} ({correct}/{n})" if 0 < n < SMALL_DENOMINATOR else share


def fraction_if_small(correct: int, n: int) -> str:
    """'23/24' on a small denominator, '' otherwise."""
    return f"{correct}/{n}" if 0 < n < SMALL_DENOMINATOR else ""


def points(delta: float | None, digits: int = 1) -> str:
    """A change in signed percentage points: '+3.5', '-22.2'."""
    if delta is None or (isinstance(delta, float) and math.isnan(delta)):
        return ""
    value = round(100 * delta, digits)
    if value == 0:
        return f"{0:.{digits}f}"
    return f"{value:+.{digits}f}"


def span(low: float | None, high: float | None, digits: int = 1) -> str:
    """An interval of proportions as '27.9–64.9' (percent)."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return "—"
    return f"{100 * low:.{digits}f}–{100 * high:.{digits}f}"


def interval_text(interval: Interval | None, digits: int = 1) -> str:
    return "—" if interval is None else span(interval.low, interval.high, digits)


def change_span(interval: Interval | None, digits: int = 1) -> str:
    """An interval of a change in signed points: '-35.2 to -16.7'."""
    if interval is None or math.isnan(interval.low) or math.isnan(interval.high):
        return "—"
    return f"{points(interval.low, digits) or '0'} to {points(interval.high, digits) or '0'}"


def p_value(p: float | None) -> str:
    if p is None or math.isnan(p):
        return ""
    if p < 0.001:
        return "<0.001"
    if p >= 0.995:
        return "1"
    return f"{p:.3f}" if p < 0.01 else f"{p:.2f}"


def seeds_text(values: list[float]) -> str:
    """Per-seed accuracies as '46.0 / 46.0 / 46.0'."""
    return " / ".join(f"{100 * v:.1f}" for v in values)
