"""The label check and the judge's verdict as Phoenix span annotations, on the span each one judges.

- ``label_check`` (CODE): the row's outcome against the label, on the span whose choice the row scores
  (the decision span of an offline selector or of a router that decided, else the chat model's span);
- ``router_check`` (CODE): a routed row whose chat model chose (gated fallback, default, narrowed) also
  gets the router's own pick checked against the label, on the decision span;
- ``judge`` (LLM): the judge's majority and its votes, on the chat model's span.

Posted with Phoenix's client (``sync=False``: Phoenix queues an annotation whose span is not stored yet).
Filter in the UI: ``annotations['label_check'].label == 'wrong_tool'``.
"""

from __future__ import annotations

import atexit
import queue
import threading
from typing import Any, Mapping

from tasks.tracing.trace_ids import DECISION, LLM, TraceIds


def selection_annotations(row: Mapping[str, Any], roles: tuple[str, ...]) -> list[dict[str, Any]]:
    """The annotations of one selection row (Phoenix's SpanAnnotationData shape)."""
    ids = TraceIds.of(row["run_id"], row["arm"], row["seed"], row["request_id"])
    scored = DECISION if (LLM not in roles or row.get("decided_by") == "router") else LLM
    chosen = row["chosen"] if row["chosen"] is not None else "(no usable answer)"
    records = [{
        "name": "label_check", "annotator_kind": "CODE", "span_id": ids.span_hex(scored),
        "result": {"label": row["outcome"], "score": 1.0 if row["correct"] else 0.0,
                   "explanation": f"expected {row['expected']}, chose {chosen}"},
        "metadata": {"expected": row["expected"], "chosen": row["chosen"]},
    }]
    if DECISION in roles and scored != DECISION and row.get("router_pick") is not None:
        right = row["router_pick"] == row["expected"]
        records.append({
            "name": "router_check", "annotator_kind": "CODE", "span_id": ids.span_hex(DECISION),
            "result": {"label": "right" if right else "wrong", "score": 1.0 if right else 0.0,
                       "explanation": f"expected {row['expected']}, the router picked {row['router_pick']}"},
            "metadata": {"expected": row["expected"], "router_pick": row["router_pick"]},
        })
    if row.get("judge_verdict") is not None and LLM in roles:
        votes = list(row.get("judge_votes") or [])
        records.append({
            "name": "judge", "annotator_kind": "LLM", "span_id": ids.span_hex(LLM),
            "result": {"label": row["judge_verdict"],
                       "explanation": f"majority {row['judge_verdict']} of votes {', '.join(votes)}",
                       **({"score": sum(v == "right" for v in votes) / len(votes)} if votes else {})},
            "metadata": {"votes": votes},
        })
    return records


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
    without TLS verification set up: httpx otherwise builds a default SSL context (the CA bundle loaded,
    ~45 ms of CPU once per process, seen in a py-spy profile) for a connection that never uses TLS."""
    import httpx
    from phoenix.client import Client

    if base_url.startswith("http://"):
        timeout = httpx.Timeout(connect=10.0, read=30.0, write=10.0, pool=10.0)  # the client's own defaults
        return Client(base_url=base_url, http_client=httpx.Client(base_url=base_url, verify=False, timeout=timeout))
    return Client(base_url=base_url)
