"""Trace and span ids derived from the row they describe, so a warehouse row finds its trace (and an
annotation its span) without any id being stored: one trace per (run, arm, seed, request), or per
(run, arm, seed, task) for tasks done on a tool surface.

Plain Python: the ids are computed the same way by the exporter and by anyone who reads the warehouse.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

ROOT, DECISION, LLM = "root", "decision", "llm"
"""Roles of a selection trace's spans; a surface task's calls are ``turn:N`` and ``tool:N``."""


def _digest(*parts: object) -> bytes:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()


@dataclass(frozen=True)
class TraceIds:
    """The ids of one trace: ``span(role)`` is stable for a role within it."""

    trace_id: int

    @classmethod
    def of(cls, run_id: str, arm: str, seed: int, unit_id: str) -> "TraceIds":
        """``unit_id`` is the request id (selection runs) or the task id (surface runs)."""
        trace_id = int.from_bytes(_digest("trace", run_id, arm, seed, unit_id)[:16], "big")
        return cls(trace_id or 1)  # 0 is the invalid id

    def span(self, role: str) -> int:
        span_id = int.from_bytes(_digest("span", self.trace_id, role)[:8], "big")
        return span_id or 1

    @property
    def trace_hex(self) -> str:
        return format(self.trace_id, "032x")

    def span_hex(self, role: str) -> str:
        """As Phoenix and the OTLP JSON encoding print a span id."""
        return format(self.span(role), "016x")
