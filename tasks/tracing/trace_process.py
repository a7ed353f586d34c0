"""The trace process: builds the spans and annotations of the units a run hands it (trace_sender.py) and
sends them, so the run's own process never loads OpenTelemetry.

It holds the units it is given until the run is done (its stdin closes), ``HOLD_ROWS`` rows are held or
the oldest held unit is ``HOLD_S`` seconds old, then builds and sends them, at a lower CPU priority than the
run: on a machine whose cores the run keeps busy (an offline run; a collector such as Phoenix on the same
machine, storing spans), tracing's work and the collector's come after the run's, not in the middle of it.
A long run (hosted models: its cores mostly wait on the network) sends as it goes, so its traces show up
in Phoenix while it runs.

    python -m tasks.tracing.trace_process HOST PORT PROJECT

stdin: units, each a 4-byte big-endian length and a pickle of (kind, payload) (trace_unit.py). stdout: one
JSON line per warning, ``{"warning": text, "spans_dropped": bool}``; anything else the process prints goes
to stderr. It ends when stdin closes (the run finished, or its process died): it sends what it holds, then
exits. A unit it cannot build turns tracing off for the run with one warning.
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
from typing import Any, BinaryIO, Callable, Mapping

from tasks.tracing.exporter import RunTracing
from tasks.tracing.selection_trace import emit_selection_unit
from tasks.tracing.surface_trace import emit_task_unit
from tasks.tracing.trace_sender import FRAME
from tasks.tracing.trace_target import TraceTarget
from tasks.tracing.trace_unit import SELECTION, TASK

HOLD_ROWS = 8_192
"""Rows held before their traces are built and sent (a few MB of plain data)."""
HOLD_S = 5.0
"""Held units are built and sent once the oldest is this old (checked as each unit arrives)."""
NICENESS = 10
"""The trace process's CPU priority below the run's (``nice``)."""

builders: dict[str, Callable[[RunTracing, Mapping[str, Any]], None]] = {
    SELECTION: emit_selection_unit, TASK: emit_task_unit}
"""Each kind of unit (trace_unit.py) and what builds its traces and annotations."""


def unit_rows(kind: str, payload: Mapping[str, Any]) -> int:
    return len(payload["items"] if kind == SELECTION else payload["rows"])


def read_units(stream: BinaryIO):
    """(kind, payload) per unit until the stream ends (a cut-off last unit is dropped)."""
    while len(head := stream.read(FRAME.size)) == FRAME.size:
        (size,) = FRAME.unpack(head)
        data = stream.read(size)
        if len(data) != size:
            return
        yield pickle.loads(data)


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


def build(tracing: RunTracing, held: list[tuple[str, Any]]) -> None:
    """Build and hand to the exporter the traces of the held units (in the order they came)."""
    for kind, payload in held:
        if not tracing.alive:
            return
        try:
            builders[kind](tracing, payload)
        except Exception as error:  # a bug here must not cost the run its rows
            tracing.give_up(f"could not build spans ({type(error).__name__}: {error})")
    held.clear()


def main(argv: list[str]) -> int:
    host, port, project = argv
    os.nice(NICENESS)
    tracing = RunTracing(TraceTarget(host=host, port=int(port), project=project), warnings_channel())
    held: list[tuple[str, Any]] = []
    n_held, oldest = 0, 0.0
    for kind, payload in read_units(sys.stdin.buffer):
        if not tracing.alive:
            continue  # read on to the end: the run never waits on a full pipe
        if not held:
            oldest = time.monotonic()
        held.append((kind, payload))
        n_held += unit_rows(kind, payload)
        if n_held >= HOLD_ROWS or time.monotonic() - oldest >= HOLD_S:
            build(tracing, held)
            n_held = 0
    build(tracing, held)
    tracing.flush()
    tracing.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
