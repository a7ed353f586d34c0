"""The run's side of tracing: hand each landed unit's rows to a trace process of its own, which builds the
spans and annotations and sends them (trace_process.py), so the run pays for copying plain data, not for
OpenTelemetry. Plain Python (no OpenTelemetry import).

- The collector is probed here first: one that does not answer turns tracing off for the run with one
  warning, and no trace process is started.
- A unit is pickled where it landed and written to the trace process's stdin from a background thread
  (length-prefixed pickles); the process's warnings come back as JSON lines on its stdout and are logged
  here, once each.
- Tracing never holds the run up: when more than ``MAX_WAITING_BYTES`` of units wait for the trace process
  (it builds spans slower than an offline run lands rows, or a slow collector holds it), a unit's traces
  are dropped, and one warning at the end counts them.
- A trace process that dies drops the rest with one warning; rows never depend on it.
- Finishing closes its stdin; it then sends what it holds and exits. A run process that is killed closes
  the pipe too: the trace process (in a session of its own, so a Ctrl-C on the terminal does not cut it
  short) still sends what it had been given. It gets no provider key in its environment.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import pickle
import queue
import re
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from tasks.core_records import TraceTarget

log = logging.getLogger("tooleval.tracing")

ROOT = Path(__file__).resolve().parents[2]
PROBE_TIMEOUT_S = 1.0
MAX_WAITING_BYTES = 64 * 1024 * 1024
"""Pickled units handed over but not yet written to the trace process: beyond this a unit's traces are
dropped (counted), so memory stays bounded and the run never waits for tracing."""
SECRET_NAME = re.compile(r"(API_KEY|_TOKEN|_SECRET|_PASSWORD|_KEY_FILE)$", re.IGNORECASE)
KEPT_NAMES = ("PHOENIX_", "OTEL_")
"""The trace process's environment leaves out variables named like a secret (a provider's API key), except
Phoenix's and OpenTelemetry's own settings."""
FRAME = struct.Struct(">II")
"""Each unit: its pickle's length and its number of rows (4 bytes each, big-endian), then the pickle."""
_STOP = None


def collector_answers(target: TraceTarget) -> bool:
    try:
        with socket.create_connection((target.host, target.port), timeout=PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False


class TraceSender:
    """One run process's link to its trace process for one target; ``alive`` turns False (once, with one
    warning) when the collector or the trace process is gone, and later units are dropped."""

    def __init__(self, target: TraceTarget) -> None:
        self.target = target
        self.alive = True
        self.warnings: list[str] = []
        self._lock = threading.Lock()
        self._units: queue.Queue = queue.Queue()
        self._waiting_bytes = 0
        self._rows_handed = self._rows_dropped = 0
        self._process: subprocess.Popen | None = None
        self._threads: list[threading.Thread] = []
        self._closed = False
        if not collector_answers(target):
            self._warn(f"tracing: no collector answers at {target.base_url}; spans and annotations of this run "
                       "are dropped (rows are unaffected)")
            self.alive = False
            return
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tasks.tracing.trace_process", target.host, str(target.port), target.project],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=trace_process_environment(), cwd=str(ROOT),
            start_new_session=True)
        for name, work in (("tooleval-trace-writer", self._write_all), ("tooleval-trace-warnings", self._read_warnings)):
            thread = threading.Thread(target=work, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        atexit.register(self.close)  # a worker process hands over its last units as it exits

    def send(self, kind: str, payload: Any, n_rows: int) -> None:
        """Hand one unit of ``n_rows`` rows to the trace process (``kind`` names its builder there); never
        waits: when too much is waiting already, the unit's traces are dropped and counted."""
        if not self.alive:
            return
        data = pickle.dumps((kind, payload), protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            self._rows_handed += n_rows
            if self._closed or self._waiting_bytes + len(data) > MAX_WAITING_BYTES:
                self._rows_dropped += n_rows
                return
            self._waiting_bytes += len(data)
        self._units.put((data, n_rows))

    def close(self) -> None:
        """No more units: write what is queued, close the trace process's input; do not wait for it."""
        with self._lock:
            if self._process is None or self._closed:
                return
            self._closed = True
        self._units.put(_STOP)
        self._threads[0].join()
        if self._rows_dropped and self.alive:
            self._warn(f"tracing: the trace process fell behind the run; the traces of {self._rows_dropped:,} of "
                       f"{self._rows_handed:,} rows were dropped (rows are unaffected)")

    def wait(self) -> list[str]:
        """``close``, then wait until the trace process has sent everything; the warnings of the run."""
        self.close()
        if self._process is not None:
            code = self._process.wait()
            for thread in self._threads[1:]:
                thread.join()
            if code != 0 and self.alive:
                self._give_up(f"the trace process ended with exit code {code}")
        return list(self.warnings)

    def _write_all(self) -> None:
        stdin = self._process.stdin
        try:
            while (unit := self._units.get()) is not _STOP:
                data, n_rows = unit
                with self._lock:
                    self._waiting_bytes -= len(data)
                if not self.alive:
                    continue
                stdin.write(FRAME.pack(len(data), n_rows))
                stdin.write(data)
        except (BrokenPipeError, OSError) as error:
            self._give_up(f"the trace process stopped taking spans ({type(error).__name__})")
            while self._units.get() is not _STOP:  # drain: senders never wait on a dead process
                pass
        finally:
            try:
                stdin.close()
            except OSError:
                pass

    def _read_warnings(self) -> None:
        """The trace process's warnings: ``{"warning": text, "spans_dropped": bool}`` one a line. Once its
        spans are being dropped (the collector is gone), units are no longer handed over."""
        for line in self._process.stdout:
            try:
                said = json.loads(line)
                message = str(said["warning"])
            except (ValueError, KeyError, TypeError):
                continue
            if said.get("spans_dropped"):
                self.alive = False
            self._warn(message)

    def _give_up(self, why: str) -> None:
        with self._lock:
            if not self.alive:
                return
            self.alive = False
        self._warn(f"tracing: {why}; spans and annotations of this run are dropped (rows are unaffected)")

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        log.warning(message)


def trace_process_environment() -> dict[str, str]:
    """The run's environment for the trace process: the project on its path, no variable named like a
    secret."""
    env = {name: value for name, value in os.environ.items()
           if name.upper().startswith(KEPT_NAMES) or not SECRET_NAME.search(name)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return env


_senders: dict[TraceTarget, TraceSender] = {}
_finishing: dict[TraceTarget, tuple[threading.Thread, TraceSender]] = {}
_senders_lock = threading.Lock()


def sender_for(target: TraceTarget) -> TraceSender:
    """This process's sender for the target (made once: threads of a run share it; a Dask worker process
    makes its own, closed as the process exits)."""
    with _senders_lock:
        if target not in _senders:
            _senders[target] = TraceSender(target)
        return _senders[target]


def start_finishing(target: TraceTarget) -> None:
    """Hand over what is queued and let the trace process finish, in a thread of its own, so the run
    registers and reports meanwhile. The thread is not a daemon: a process that does not wait for it
    (``finished_warnings``) still hands over every unit before it exits."""
    with _senders_lock:
        sender = _senders.pop(target, None)
        if sender is None:
            return
        thread = threading.Thread(target=sender.wait, name="tooleval-trace-finish", daemon=False)
        _finishing[target] = (thread, sender)
    thread.start()


ANNOUNCE_AFTER_S = 1.0
"""``finished_warnings`` says it is still sending once it has waited this long."""


def finished_warnings(target: TraceTarget, announce: Callable[[str], None] | None = None) -> list[str]:
    """Wait until the target's last started finish is done; the warnings its tracing gave. ``announce`` is
    told, once, when that takes longer than ``ANNOUNCE_AFTER_S`` (a collector storing spans slowly)."""
    with _senders_lock:
        finishing = _finishing.get(target)
    if finishing is None:
        return []
    thread, sender = finishing
    if announce is not None:
        thread.join(ANNOUNCE_AFTER_S)
        if thread.is_alive():
            pid = sender._process.pid if sender._process is not None else None
            announce(f"sending the rest to {target.base_url} (the trace process, pid {pid}; Ctrl-C leaves it "
                     "to finish on its own)")
    thread.join()
    return list(sender.warnings)


def finish_tracing(target: TraceTarget) -> list[str]:
    """Send what is queued and end this process's tracing for the target; the warnings it gave."""
    start_finishing(target)
    return finished_warnings(target)
