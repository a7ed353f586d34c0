"""Tools given up for the rest of a run after they hung: a bounded number of call timeouts per tool.

A call with no answer within the surface's ``call_timeout_s`` stops its task with ``surface_error``. A tool
that never returns would cost every later task that calls it the whole timeout again, and a toolkit call
that cannot be stopped (a loop that swallows every exception, a call blocked in C) keeps its thread; so once
a tool has timed out ``GIVE_UP_AFTER`` times in this process's run, it is not called again: each later call
to it is an error call at once (``ToolGivenUp``, a ``SurfaceBroke``: the task stops with ``surface_error``,
not carried out, never cached), its detail naming the tool, the timeouts and the limit. A run with a hung
tool thus ends in about ``GIVE_UP_AFTER`` (plus the calls already in flight) times ``call_timeout_s`` more
than it would without it, and keeps at most that many stuck threads. The counts are per process (each
process of a distributed run gives up on its own) and cleared when a run's units are done.
"""

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
