"""The trace process's tracer (trace_process.py): the official OpenTelemetry SDK (TracerProvider,
BatchSpanProcessor, OTLP/HTTP exporter) with OpenInference's project resource, and two things the SDK leaves
to its user:

- ids planned from the row (trace_ids.py) through the SDK's own ``IdGenerator`` hook, so an annotation can
  name its span without the id travelling anywhere;
- a collector that stops answering never holds a run up: an export that fails drops that batch and every
  later one with one warning (the run's process probed the collector before starting this one).
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator, Sequence

from openinference.semconv.resource import ResourceAttributes
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import Tracer

from tasks.tracing.annotations import AnnotationPoster
from tasks.tracing.trace_target import TraceTarget

EXPORT_TIMEOUT_S = 10.0
"""Per export call (the SDK's exporter retries within it; its own default): a collector busy storing earlier
spans may answer slowly, one that is gone is given up after this."""
FLUSH_EVERY_SPANS = 8_192
"""After this many spans built, the builder waits until they are exported (``built``): the SDK's queue,
twice as long, never fills (a full queue drops spans), and a slow collector slows the trace process, not
the run."""
MAX_QUEUED_SPANS = 2 * FLUSH_EVERY_SPANS

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


Warn = Callable[[str, bool], None]
"""Says one warning: its text, and whether spans (not only annotations) are dropped from now on."""


class RunTracing:
    """The trace process's tracer for one target; ``alive`` turns False (once, with one warning) when the
    collector stops taking spans, and spans and annotations are then dropped."""

    def __init__(self, target: TraceTarget, warn: Warn) -> None:
        self.target = target
        self.alive = True
        self._say = warn
        self._lock = threading.Lock()
        self.annotations = AnnotationPoster(target.base_url, lambda message: warn(message, False))
        # the SDK's exporters log every failed batch themselves; this module says it once
        logging.getLogger("opentelemetry.exporter").setLevel(logging.CRITICAL)
        resource = Resource.create({ResourceAttributes.PROJECT_NAME: target.project, "service.name": "tooleval"})
        self.provider = TracerProvider(resource=resource, id_generator=PlannedIds())
        exporter = OTLPSpanExporter(endpoint=target.traces_url, timeout=EXPORT_TIMEOUT_S)
        self.provider.add_span_processor(BatchSpanProcessor(DroppingExporter(exporter, target, self),
                                                            max_queue_size=MAX_QUEUED_SPANS))
        self.tracer: Tracer = self.provider.get_tracer("tooleval")
        self._unflushed = 0

    def give_up(self, why: str) -> None:
        with self._lock:
            if not self.alive:
                return
            self.alive = False
            self.annotations.alive = False
        self._say(f"tracing: {why}; spans and annotations of this run are dropped (rows are unaffected)", True)

    def built(self, n_spans: int) -> None:
        """Count spans built; every ``FLUSH_EVERY_SPANS`` export them before building more."""
        self._unflushed += n_spans
        if self._unflushed >= FLUSH_EVERY_SPANS:
            self._send_spans()

    def _send_spans(self) -> None:
        self._unflushed = 0
        if self.alive:
            self.provider.force_flush(timeout_millis=int(3 * EXPORT_TIMEOUT_S * 1000))

    def flush(self) -> None:
        self._send_spans()
        self.annotations.close()

    def shutdown(self) -> None:
        self.provider.shutdown()
