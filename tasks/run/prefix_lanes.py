"""Prefix lanes: one (arm, seed) at a time on each hosted-model endpoint, so the provider's prompt cache holds.

Every request of one (arm, seed) starts with the same prefix: the tools in that seed's order and the agent
prompt, most of every prompt. A server's prefix cache (llama.cpp's, OpenAI's, Anthropic's) keeps it only while
those requests come together; but the thread runner runs several work units at once, so at a seed's boundary
units of two seeds would send their requests to one endpoint's queue side by side.

A unit of a hosted arm holds the lane of its endpoint (provider and base_url) while it selects. Units of
the lane's current (arm, seed) enter together (their calls still overlap up to the endpoint's
``concurrency``); a unit of another (arm, seed) waits until the lane is empty, and when several wait, the
earliest in plan order (rung, seed) goes next. Arms on different endpoints never wait for each other.
Lanes are per process: runners that spread units over processes (Dask, Ray) group nothing across them.

A unit may leave its lane before it ends (``LaneHold.tail``): a task unit leaves once its unfinished tasks are
fewer than the endpoint's ``concurrency``, every one of them already running, so the next (arm, seed) fills
the slots the draining unit can no longer fill. Its last conversations' turns then overlap the next
prefix's first ones (at most ``concurrency - 1`` of them); at ``concurrency`` 1 (a single-slot server) a unit
never leaves early.
"""

from __future__ import annotations

import threading
from collections import Counter
from contextlib import contextmanager
from typing import Hashable, Iterator


class PrefixLane:
    """The lane of one endpoint: which (arm, seed) holds it, and how many of its units are inside."""

    def __init__(self) -> None:
        self._turn = threading.Condition()
        self.current: Hashable | None = None
        self.inside = 0
        self.waiting: Counter = Counter()
        self.switches = 0
        """How many times the lane passed to another prefix (a measure of interleaving)."""

    def _may_enter(self, key: Hashable) -> bool:
        if self.current == key:
            return True
        return self.inside == 0 and key == min(self.waiting)

    @contextmanager
    def hold(self, key: Hashable) -> Iterator[LaneHold]:
        with self._turn:
            self.waiting[key] += 1
            while not self._may_enter(key):
                self._turn.wait()
            self.waiting[key] -= 1
            if not self.waiting[key]:
                del self.waiting[key]
            if self.current != key:
                self.switches += 1
            self.current = key
            self.inside += 1
        place = LaneHold(self)
        try:
            yield place
        finally:
            place.leave()

    def _leave(self) -> None:
        with self._turn:
            self.inside -= 1
            if self.inside == 0:
                self.current = None if self.waiting else self.current
            self._turn.notify_all()


class LaneHold:
    """One unit's place in a lane: left when the unit ends, or earlier by ``tail``."""

    def __init__(self, lane: PrefixLane | None) -> None:
        self._lane = lane
        self._left = lane is None
        self._lock = threading.Lock()

    def leave(self) -> None:
        """Let the next prefix in (once; later calls do nothing)."""
        with self._lock:
            if self._left:
                return
            self._left = True
        assert self._lane is not None
        self._lane._leave()

    def tail(self, unfinished: int, concurrency: int) -> None:
        """Leave once ``unfinished`` items (all running) can no longer fill the endpoint's ``concurrency``."""
        if unfinished < concurrency:
            self.leave()


NO_LANE = LaneHold(None)
"""The place of a unit that holds no lane (an offline agent or selector, or lanes off): leaving does nothing."""


_LANES: dict[Hashable, PrefixLane] = {}
_LANES_LOCK = threading.Lock()


def lane_for(endpoint: Hashable) -> PrefixLane:
    """The process-wide lane of one endpoint."""
    with _LANES_LOCK:
        if endpoint not in _LANES:
            _LANES[endpoint] = PrefixLane()
        return _LANES[endpoint]
