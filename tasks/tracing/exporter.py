"""The run's tracer: the official OpenTelemetry SDK (TracerProvider, BatchSpanProcessor, OTLP/HTTP exporter)
with OpenInference's project resource, and two things the SDK leaves to its user:

- ids planned from the row (trace_ids.py) through the SDK's own ``IdGenerator`` hook, so an annotation can
  name its span without the id travelling anywhere;
- a collector that is down never holds a run up: it is probed once (a refused connection disables tracing
  for the run with one warning), and an export that fails later drops that batch and every later one with
  one warning. Spans are sent from the SDK's background thread; rows never wait for them.
"""

from __future__ import annotations

import logging
import socket
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Sequence

from openinference.semconv.resource import ResourceAttributes
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import Tracer

from tasks.tracing.annotations import AnnotationPoster
from tasks.tracing.trace_target import TraceTarget

log = logging.getLogger("tooleval.tracing")

EXPORT_TIMEOUT_S = 10.0
"""Per export call (the SDK's exporter retries within it; its own default): a collector busy storing earlier
spans may answer slowly, one that is gone is given up after this."""
EXPORT_DELAY_MS = 250
"""The background exporter sends every quarter second (the SDK's default is 5 s): spans leave while the run
goes on instead of all at the flush that ends it."""
PROBE_TIMEOUT_S = 1.0
MAX_QUEUED_SPANS = 32_768
"""Spans waiting for the exporter (the SDK's default, 2,048, is a few units' worth: a full queue drops)."""

_planned: ContextVar[tuple[int, int] | None] = ContextVar("tooleval_planned_ids", default=None)


class PlannedIds(IdGenerator):
    """Hands out the ids set with ``planned_ids`` (else random ones, as the SDK's default does)."""

    def __init__(self) -> None:
        self._random = RandomIdGenerator()

    def generate_trace_id(self) -> int:
        planned = _planned.get()
        return planned[0] if planned else self._random.generate_trace_id()

    def generate_span_id(self) -> int:
        planned = _planned.get()
        return planned[1] if planned else self._random.generate_span_id()


@contextmanager
def planned_ids(trace_id: int, span_id: int) -> Iterator[None]:
    """The next span started in this context gets these ids (the trace id only when it is a root)."""
    token = _planned.set((trace_id, span_id))
    try:
        yield
    finally:
        _planned.reset(token)


class DroppingExporter(SpanExporter):
    """The OTLP exporter, until its first failed export: then one warning, and every later batch is
    dropped at once instead of being retried against a collector that is gone."""

    def __init__(self, inner: SpanExporter, target: TraceTarget, tracing: "RunTracing") -> None:
        self._inner, self._target, self._tracing = inner, target, tracing

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not self._tracing.alive:
            return SpanExportResult.FAILURE
        result = self._inner.export(spans)
        if result is not SpanExportResult.SUCCESS:
            self._tracing.give_up(f"the collector at {self._target.traces_url} did not accept spans")
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._inner.force_flush(timeout_millis)


class RunTracing:
    """One process's tracer for one target; ``alive`` turns False (once, with one warning) when the
    collector cannot be reached, and spans and annotations are then dropped."""

    def __init__(self, target: TraceTarget) -> None:
        self.target = target
        self.alive = True
        self.warnings: list[str] = []
        self._lock = threading.Lock()
        self.provider: TracerProvider | None = None
        self.tracer: Tracer | None = None
        self.annotations = AnnotationPoster(target.base_url, self._warn)
        if not collector_answers(target):
            self.give_up(f"no collector answers at {target.base_url}")
            return
        # the SDK's exporters log every failed batch themselves; this module says it once
        logging.getLogger("opentelemetry.exporter").setLevel(logging.CRITICAL)
        resource = Resource.create({ResourceAttributes.PROJECT_NAME: target.project, "service.name": "tooleval"})
        self.provider = TracerProvider(resource=resource, id_generator=PlannedIds())
        exporter = OTLPSpanExporter(endpoint=target.traces_url, timeout=EXPORT_TIMEOUT_S)
        self.provider.add_span_processor(BatchSpanProcessor(DroppingExporter(exporter, target, self),
                                                            max_queue_size=MAX_QUEUED_SPANS,
                                                            schedule_delay_millis=EXPORT_DELAY_MS))
        self.tracer = self.provider.get_tracer("tooleval")

    def give_up(self, why: str) -> None:
        with self._lock:
            if not self.alive:
                return
            self.alive = False
            self.annotations.alive = False
        self._warn(f"tracing: {why}; spans and annotations of this run are dropped (rows are unaffected)")

    def _warn(self, message: str) -> None:
        self.warnings.append(message)
        log.warning(message)

    def flush(self) -> None:
        if self.provider is not None and self.alive:
            self.provider.force_flush(timeout_millis=int(3 * EXPORT_TIMEOUT_S * 1000))
        self.annotations.close()

    def shutdown(self) -> None:
        if self.provider is not None:
            self.provider.shutdown()


def collector_answers(target: TraceTarget) -> bool:
    try:
        with socket.create_connection((target.host, target.port), timeout=PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False


_tracings: dict[TraceTarget, RunTracing] = {}
_tracings_lock = threading.Lock()


def tracing_for(target: TraceTarget) -> RunTracing:
    """This process's tracing for the target (made once: threads of a run share it; a Dask worker process
    makes its own, flushed by the SDK when the process exits)."""
    with _tracings_lock:
        if target not in _tracings:
            _tracings[target] = RunTracing(target)
        return _tracings[target]


_finishing: dict[TraceTarget, tuple[threading.Thread, RunTracing]] = {}


def finish_tracing(target: TraceTarget) -> list[str]:
    """Send what is queued and close this process's tracer for the target; the warnings it gave."""
    start_finishing(target)
    return finished_warnings(target)


def start_finishing(target: TraceTarget) -> None:
    """Start sending what is queued (spans, annotations) in a thread of its own, so the run registers and
    reports meanwhile. The thread is not a daemon: a process that does not wait for it (``finished_warnings``)
    still sends everything before it exits."""
    with _tracings_lock:
        tracing = _tracings.pop(target, None)
        if tracing is None:
            return

        def finish() -> None:
            tracing.flush()
            tracing.shutdown()

        thread = threading.Thread(target=finish, name="tooleval-trace-flush", daemon=False)
        _finishing[target] = (thread, tracing)
    thread.start()


def finished_warnings(target: TraceTarget) -> list[str]:
    """Wait until the target's last started finish is done; the warnings its tracing gave."""
    with _tracings_lock:
        finishing = _finishing.get(target)
    if finishing is None:
        return []
    thread, tracing = finishing
    thread.join()
    return list(tracing.warnings)
