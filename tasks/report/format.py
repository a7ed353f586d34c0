"""How figures are written in every report format: percentages, fractions, points, intervals, p-values.

Percentages on small denominators carry the fraction (23/24) as the reader needs both; intervals are
written low–high in percent; changes in signed points; p-values to three decimals, rounded half up
(p-values print with up to three decimals: 0.125 prints as 0.125, not 0.12).
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from typing import TYPE_CHECKING

from tasks.stats.estimate import Interval

if TYPE_CHECKING:
    from tasks.stats.paired import PairedComparison

SMALL_DENOMINATOR = 100
"""Below this many trials a percentage also shows its fraction."""


def pct(value: float | None, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{100 * value:.{digits}f}%"


def pct_below(value: float, bound: float) -> str:
    """``value`` as a percentage with the fewest digits (at least one) that show it below ``bound``, so a
    line saying ``value < bound`` never reads '90.0% < 90%' (0.8996 gives '89.96%')."""
    for digits in range(1, 7):
        shown = pct(value, digits)
        if float(shown[:-1]) < round(100 * bound, 9):
            return shown
    return pct(value)


def pct_with_fraction(correct: int, n: int) -> str:
    """'95.8% (23/24)' on a small denominator, '40.8%' on a large one."""
    share = pct(correct / n if n else None)
    return f"{share} ({correct}/{n})" if 0 < n < SMALL_DENOMINATOR else share


def fraction_if_small(correct: int, n: int) -> str:
    """'23/24' on a small denominator, '' otherwise."""
    return f"{correct}/{n}" if 0 < n < SMALL_DENOMINATOR else ""


def accuracy_cell(right: int, n: int, interval: Interval, spread: float = 0.0) -> str:
    """'70.0% 21/30' over '39.7–89.2', then 'spread 3.3' when the seeds disagree: an accuracy and its 95% CI."""
    fraction = fraction_if_small(right, n)
    text = f"{pct(interval.estimate)}{' ' + fraction if fraction else ''}\n{interval_text(interval)}"
    return text + (f"\nspread {100 * spread:.1f}" if spread > 0 else "")


def points(delta: float | None, digits: int = 1) -> str:
    """A change in signed percentage points: '+3.5', '-22.2'."""
    if delta is None or (isinstance(delta, float) and math.isnan(delta)):
        return ""
    value = as_printed(delta, digits)
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
    """An interval of a change in signed points: '-35.2 to -16.7'. An end that lies off 0 keeps its side when
    printed (-0.004 points prints as -0.004, never 0.0): a reading drawn from the interval (▼ drop) must be
    visible in the interval printed beside it."""
    if interval is None or math.isnan(interval.low) or math.isnan(interval.high):
        return "—"
    return f"{_end(interval.low, digits)} to {_end(interval.high, digits)}"


def _end(value: float, digits: int) -> str:
    places = digits
    while value != 0 and as_printed(value, places) == 0 and places < digits + 6:
        places += 1
    return points(value, places) or "0"


PRINTED_DIGITS = 1
"""Decimals of every percentage and point figure the report prints; gates compare at this precision."""


def as_printed(value: float, digits: int = PRINTED_DIGITS) -> float:
    """A fraction as the report prints it, in percent or points: 0.10000000000000003 -> 10.0."""
    return round(100 * value, digits)


SIGNIFICANCE_LEVEL = 0.05
"""A p-value is printed with as many decimals as it takes to fall on the same side of this level as it is."""


def paired_reading(paired: PairedComparison) -> str:
    """How to read a paired change: exactly what the 95% interval printed beside it says. It excludes 0:
    "▼ drop" or "▲ gain"; it holds 0: "could be chance"; nothing moved: "no request changed". The interval is
    taken over every seed of every request (the request is the cluster), so the seed spread needs no second
    test."""
    estimate = paired.change.estimate
    if paired.discordant == 0 and abs(estimate) < 1e-12:
        return "no request changed"
    if paired.significant:
        return "▼ drop" if estimate < 0 else "▲ gain"
    return "could be chance"


def change_cells(paired: PairedComparison) -> list[str]:
    """A paired change's cells after its Δ: the 95% CI, 'worse / better' requests, the p-value, the reading."""
    return [change_span(paired.change), f"{paired.worse} / {paired.better}", p_value(paired.p_value),
            paired_reading(paired)]


def p_value(p: float | None) -> str:
    """'<0.001', '0.002', '0.031', '0.125', '0.5', '1' (three decimals, half up, trailing zeros dropped; more
    where three would carry it across 0.05: 0.0496, never 0.05)."""
    if p is None or math.isnan(p):
        return ""
    if p < 0.001:
        return "<0.001"
    places = 3
    text = str(Decimal(p).quantize(Decimal("0.001"), rounding=ROUND_HALF_UP))
    while (float(text) < SIGNIFICANCE_LEVEL) != (p < SIGNIFICANCE_LEVEL) and places < 12:
        places += 1  # 0.0496 must not print as 0.05 beside a reading that says p < 0.05
        text = str(Decimal(p).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))
    text = text.rstrip("0").rstrip(".")
    return "1" if text in ("1", "") else text


def seeds_text(values: list[float]) -> str:
    """Per-seed accuracies as '46.0 / 46.0 / 46.0'."""
    return " / ".join(f"{100 * v:.1f}" for v in values)
