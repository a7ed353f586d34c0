"""Tools given up for the rest of a run after they hung: once a tool has timed out ``GIVE_UP_AFTER`` times in
this process's run, each later call to it raises ``ToolGivenUp`` at once (the task stops with
``surface_error``), so a hung tool costs a bounded number of timeouts and stuck threads. The counts are per
process and cleared when a run's units are done."""

from __future__ import annotations

import threading

from tasks.surface.surface_session import SurfaceBroke

GIVE_UP_AFTER = 3
"""Timeouts of one tool in a run after which it is not called again in that run."""

_lock = threading.Lock()
_timeouts: dict[tuple[str, str], int] = {}


class ToolGivenUp(SurfaceBroke):
    """A call to a tool given up for the rest of the run: not made."""


def check_not_given_up(surface: str, tool: str, name: str) -> None:
    """Raise ToolGivenUp when ``tool`` (``name`` as said) of ``surface`` has timed out GIVE_UP_AFTER times
    in this run."""
    with _lock:
        count = _timeouts.get((surface, tool), 0)
    if count >= GIVE_UP_AFTER:
        raise ToolGivenUp(f"tool '{name}' not called: it gave no answer within the surface's call_timeout_s "
                          f"{count} times in this run, so it is given up for the rest of the run (after "
                          f"{GIVE_UP_AFTER} timeouts)")


def timed_out(surface: str, tool: str) -> int:
    """Count a timeout of ``tool`` of ``surface``; the count so far."""
    with _lock:
        _timeouts[(surface, tool)] = count = _timeouts.get((surface, tool), 0) + 1
    return count


def forget() -> None:
    """A run's units are done: the next run calls every tool again."""
    with _lock:
        _timeouts.clear()
