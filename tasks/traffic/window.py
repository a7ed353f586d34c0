"""Production windows: whole ISO weeks, named like the weights files (``2026-W44-W47``)."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, timezone

from schemas.traffic import Window
from tasks.files.input_errors import InputError
import hashlib

_SAME_YEAR = re.compile(r"^(\d{4})-W(\d{2})(?:-W(\d{2}))?$")
_ACROSS = re.compile(r"^(\d{4})-W(\d{2})\.\.(\d{4})-W(\d{2})$")


def week_start(year: int, week: int) -> datetime:
    """Monday 00:00 UTC of an ISO week."""
    return datetime.combine(date.fromisocalendar(year, week, 1), time(), tzinfo=timezone.utc)


def monday_of(moment: datetime) -> datetime:
    """Monday 00:00 UTC of the ISO week holding ``moment``."""
    moment = moment.astimezone(timezone.utc)
    return datetime.combine(moment.date() - timedelta(days=moment.weekday()), time(), tzinfo=timezone.utc)


def window_between(start: datetime, end: datetime) -> Window:
    """The window of whole weeks from Monday ``start`` to Monday ``end`` (exclusive)."""
    first, last = start.isocalendar(), (end - timedelta(days=1)).isocalendar()
    if first.year == last.year:
        window_id = f"{first.year}-W{first.week:02d}-W{last.week:02d}"
    else:
        window_id = f"{first.year}-W{first.week:02d}..{last.year}-W{last.week:02d}"
    return Window(id=window_id, start=start, end=end)


def parse_window(window_id: str, where: str = "window") -> Window:
    """``2026-W44-W47``, ``2026-W44`` (one week) or ``2026-W52..2027-W03``."""
    try:
        if match := _SAME_YEAR.match(window_id):
            year, first, last = int(match[1]), int(match[2]), int(match[3] or match[2])
            start, end = week_start(year, first), week_start(year, last) + timedelta(weeks=1)
        elif match := _ACROSS.match(window_id):
            start = week_start(int(match[1]), int(match[2]))
            end = week_start(int(match[3]), int(match[4])) + timedelta(weeks=1)
        else:
            raise ValueError("not a window id")
    except ValueError:
        raise InputError.one(where, window_id, "window-format",
                             "a window is whole ISO weeks: '2026-W44-W47', '2026-W44' or '2026-W52..2027-W03'") from None
    if end <= start:
        raise InputError.one(where, window_id, "window-format", "the last week comes before the first")
    return window_between(start, end)


def last_complete_weeks(weeks: int, now: datetime, newest_turn: datetime | None) -> Window:
    """The last ``weeks`` whole weeks before ``now`` that the log covers.

    A week counts as covered when the log reaches its Sunday; a log that stops earlier (a stale export)
    moves the window back rather than weighting a half-empty week.
    """
    end = monday_of(now)
    if newest_turn is not None:
        newest = newest_turn.astimezone(timezone.utc)
        covered_end = monday_of(newest) + (timedelta(weeks=1) if newest.weekday() == 6 else timedelta())
        end = min(end, covered_end)
    return window_between(end - timedelta(weeks=weeks), end)


def sampling_seed_for(window: Window) -> int:
    """A seed derived from the window id: re-running a week's resample draws the same requests."""
    return int(hashlib.sha256(window.id.encode()).hexdigest()[:8], 16) % (2**31)
