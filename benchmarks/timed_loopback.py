"""The loopback provider server (tests/provider_server.py) with a clock on every call, as its own process.

    python -m benchmarks.timed_loopback --latency-ms 200 --turns 2

prints ``port <n>``, then serves the ``--turns`` script (the first offered tool, then text) after
``--latency-ms``. Each line read on stdin is answered with one JSON line: the calls answered since the last
such line, when the first of them arrived and the last answer left (``time.perf_counter``, the system's
monotonic clock, which a client process on this machine reads alike) and the seconds between (the window
a client's work filled), the time the calls spent inside the server summed, and the most in flight at once. A client
process's start-up and its exit stay outside that window, which is what makes it a fair reading of the
calls alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.provider_server import ProviderServer, Reply, Seen, turns_then_text  # noqa: E402


class CallClock:
    """When each call arrived and its answer left, in this process's clock; read and restarted by ``window``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans: list[tuple[float, float]] = []
        self._open = 0
        self._most = 0

    def arrived(self) -> float:
        with self._lock:
            self._open += 1
            self._most = max(self._most, self._open)
        return time.perf_counter()

    def answered(self, arrived: float) -> None:
        now = time.perf_counter()
        with self._lock:
            self._open -= 1
            self._spans.append((arrived, now))

    def window(self) -> dict[str, Any]:
        with self._lock:
            spans, most = self._spans, self._most
            self._spans, self._most = [], self._open
        if not spans:
            return {"calls": 0}
        first, last = min(s for s, _ in spans), max(e for _, e in spans)
        return {"calls": len(spans), "first": first, "last": last, "window_s": last - first,
                "served_s": sum(e - s for s, e in spans),
                "most_in_flight": most, "in_flight": in_flight(spans, first, last)}


def in_flight(spans: list[tuple[float, float]], first: float, last: float, step: float = 0.5) -> list[float]:
    """The calls in flight on average in each ``step`` seconds of the window (where slots idled)."""
    bins = [0.0] * (int((last - first) / step) + 1)
    for start, end in spans:
        for i in range(int((start - first) / step), int((end - first) / step) + 1):
            low, high = first + i * step, first + (i + 1) * step
            bins[i] += max(0.0, min(end, high) - max(start, low)) / step
    return [round(b, 1) for b in bins]


def timed(script, clock: CallClock):
    """``script`` with every reply stamped as it leaves (its ``reshape`` runs after the latency, before sending)."""
    def stamped(seen: Seen) -> Reply:
        arrived = clock.arrived()
        reply = script(seen)

        def leave(payload: dict[str, Any]) -> dict[str, Any]:
            clock.answered(arrived)
            return payload

        return replace(reply, reshape=leave)
    return stamped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--turns", type=int, default=2)
    args = parser.parse_args(argv)
    clock = CallClock()
    server = ProviderServer(timed(turns_then_text(args.turns), clock), latency_s=args.latency_ms / 1000,
                            record=False)
    with server:
        print(f"port {server.port}", flush=True)
        for _ in sys.stdin:
            print(json.dumps(clock.window()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
