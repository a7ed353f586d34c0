"""Span annotations (each instrument's checks of a row, e.g. tasks/selection/selection_trace.py), posted to
Phoenix on the span each one judges.

Posted with Phoenix's client (``sync=False``: Phoenix queues an annotation whose span is not stored yet).
Filter in the UI: ``annotations['label_check'].label == 'wrong_tool'``.
"""

from __future__ import annotations

import atexit
import queue
import threading
from typing import Any


class AnnotationPoster:
    """Phoenix's client for one target, posting from a background thread so a unit never waits for
    Phoenix. The first failure (no Phoenix there, or it refused) says so once and drops later posts:
    annotations never hold a run up or fail it. ``close`` sends what is queued (bounded wait)."""

    CLOSE_TIMEOUT_S = 30.0

    def __init__(self, base_url: str, warn) -> None:
        self._base_url, self._warn = base_url, warn
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.alive = True

    def post(self, records: list[dict[str, Any]]) -> None:
        if not records or not self.alive:
            return
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._send_all, name="tooleval-annotations", daemon=True)
                self._thread.start()
                atexit.register(self.close)  # a worker process sends its last annotations as it exits
        self._queue.put(records)

    def close(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join(self.CLOSE_TIMEOUT_S)

    def _send_all(self) -> None:
        client = None
        while (records := self._queue.get()) is not None:
            if not self.alive:
                continue
            try:
                if client is None:
                    client = phoenix_client(self._base_url)
                client.spans.log_span_annotations(span_annotations=records, sync=False)
            except Exception as error:  # any failure: the run goes on without annotations
                self.alive = False
                self._warn(f"tracing: Phoenix at {self._base_url} did not take annotations "
                           f"({type(error).__name__}); later annotations of this run are dropped (rows are unaffected)")


def phoenix_client(base_url: str):
    """Phoenix's client (only a traced run loads it). For a plain-HTTP Phoenix its HTTP client is made
    without TLS verification set up: httpx otherwise loads the CA bundle for a connection that never uses TLS."""
    import httpx
    from phoenix.client import Client

    if base_url.startswith("http://"):
        timeout = httpx.Timeout(connect=10.0, read=30.0, write=10.0, pool=10.0)  # the client's own defaults
        return Client(base_url=base_url, http_client=httpx.Client(base_url=base_url, verify=False, timeout=timeout))
    return Client(base_url=base_url)
