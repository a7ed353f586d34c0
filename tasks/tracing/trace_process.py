"""The trace process: builds the spans and annotations of the units a run hands it (trace_sender.py) and
sends them, so the run's own process never loads OpenTelemetry.

When it builds, at a lower CPU priority than the run:

- while the run lands rows fast (more than ``FAST_ROWS_PER_S`` over the last ``HOLD_S`` seconds: an offline
  run, its cores busy), the units wait in a temporary file and their traces are built and sent once the
  run is done (its stdin closes), so neither this process nor a collector on the same machine (Phoenix
  storing spans costs more CPU than the run that made them) competes with the run;
- a slower run (hosted models: its cores mostly wait on the network) has what it handed over built and
  sent every ``HOLD_S`` seconds, so its traces show up in Phoenix while it runs;
- past ``SPILL_BYTES`` waiting, the units are built and sent whatever the run's pace (the file stays
  bounded).

    python -m tasks.tracing.trace_process HOST PORT PROJECT

stdin: units, each framed by trace_sender.FRAME (its pickle's length and its rows) and a pickle of (kind,
payload), kind the unit's instrument (each instrument's traced_unit.py). stdout: one JSON line per warning,
``{"warning": text, "spans_dropped": bool}``; anything else the process prints goes to stderr. It ends when
stdin closes (the run finished, or its process died): it sends what it holds, then exits. A unit it cannot
build turns tracing off for the run with one warning.
"""

from __future__ import annotations

import json
import os
import pickle
import queue
import sys
import tempfile
import threading
import time
from collections import deque
from typing import Any, BinaryIO, Callable, Iterator, Mapping

from tasks.core_records import TraceTarget
from tasks.instrument_registry import card
from tasks.tracing.exporter import RunTracing
from tasks.tracing.trace_sender import FRAME

HOLD_S = 5.0
"""A slow run's units are built and sent once the oldest has waited this long."""
FAST_ROWS_PER_S = 500
"""A run landing more rows a second than this (over the last ``HOLD_S``) keeps its traces waiting until it is
done. Offline routers land thousands a second here; hosted models tens."""
SPILL_BYTES = 1 << 30
"""Pickled units waiting in the temporary file beyond which they are built and sent at once."""
TICK_S = 1.0
"""How often the hold is looked at when no unit arrives."""
NICENESS = 10
"""The trace process's CPU priority below the run's (``nice``)."""

Builder = Callable[[RunTracing, Mapping[str, Any]], None]
"""What builds the traces and annotations of one unit's payload (its instrument's traced_unit.py)."""


def builder(kind: str) -> Builder:
    """The trace builder of instrument ``kind`` (its card's ``trace_builder``)."""
    found = card(kind).trace_builder
    if found is None:
        raise ValueError(f"instrument {kind} builds no traces")
    return found()

_END = None


def read_frames(stream: BinaryIO, into: queue.Queue) -> None:
    """(n_rows, pickle bytes) per unit until the stream ends (a cut-off last unit is dropped), then _END."""
    try:
        while len(head := stream.read(FRAME.size)) == FRAME.size:
            size, n_rows = FRAME.unpack(head)
            data = stream.read(size)
            if len(data) != size:
                break
            into.put((n_rows, data))
    finally:
        into.put(_END)


class HeldUnits:
    """Units waiting to be built, in a temporary file (deleted when closed), in the order they came."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="tooleval-trace-")
        self.n_rows = self.n_bytes = 0
        self.since = 0.0

    def add(self, n_rows: int, data: bytes) -> None:
        if not self.n_rows:
            self.since = time.monotonic()
        self._file.write(FRAME.pack(len(data), n_rows))
        self._file.write(data)
        self.n_rows += n_rows
        self.n_bytes += len(data)

    def take(self) -> Iterator[tuple[str, Any]]:
        """Every held unit as (kind, payload), one at a time; the hold is empty afterwards."""
        self._file.flush()
        self._file.seek(0)
        try:
            while len(head := self._file.read(FRAME.size)) == FRAME.size:
                size, _ = FRAME.unpack(head)
                yield pickle.loads(self._file.read(size))
        finally:
            self._file.seek(0)
            self._file.truncate()
            self.n_rows = self.n_bytes = 0

    def close(self) -> None:
        self._file.close()


def warnings_channel():
    """stdout for the warnings alone: the original descriptor is kept, and fd 1 is pointed at stderr."""
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def warn(message: str, spans_dropped: bool) -> None:
        try:
            channel.write(json.dumps({"warning": message, "spans_dropped": spans_dropped}) + "\n")
        except OSError:  # the run's process is gone: nobody to tell, the spans still go
            pass

    return warn


def build(tracing: RunTracing, units: Iterator[tuple[str, Any]]) -> None:
    """Build the units' traces and hand them to the exporter (in the order they came)."""
    for kind, payload in units:
        if not tracing.alive:
            continue  # read on: the hold is emptied all the same
        try:
            builder(kind)(tracing, payload)
        except Exception as error:  # a bug here must not cost the run its rows
            tracing.give_up(f"could not build spans ({type(error).__name__}: {error})")


def run_is_fast(arrivals: deque, now: float) -> bool:
    """Whether the run landed more than ``FAST_ROWS_PER_S`` rows a second over the last ``HOLD_S``."""
    while arrivals and arrivals[0][0] < now - HOLD_S:
        arrivals.popleft()
    return sum(n for _, n in arrivals) > FAST_ROWS_PER_S * HOLD_S


def main(argv: list[str]) -> int:
    host, port, project = argv
    os.nice(NICENESS)
    tracing = RunTracing(TraceTarget(host=host, port=int(port), project=project), warnings_channel())
    frames: queue.Queue = queue.Queue()
    threading.Thread(target=read_frames, args=(sys.stdin.buffer, frames), name="tooleval-trace-reader",
                     daemon=True).start()  # reads on while spans are built: the run never waits on a full pipe
    held = HeldUnits()
    arrivals: deque = deque()
    try:
        while True:
            try:
                frame = frames.get(timeout=TICK_S)
            except queue.Empty:
                frame = ()
            if frame is _END:
                break
            now = time.monotonic()
            if frame and tracing.alive:
                held.add(*frame)
                arrivals.append((now, frame[0]))
            if held.n_rows and (held.n_bytes >= SPILL_BYTES
                                or (now - held.since >= HOLD_S and not run_is_fast(arrivals, now))):
                build(tracing, held.take())
        build(tracing, held.take())
    finally:
        held.close()
    tracing.flush()
    tracing.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
