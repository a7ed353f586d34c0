"""The trace process's tracer (trace_process.py): the official OpenTelemetry SDK (TracerProvider,
BatchSpanProcessor, OTLP/HTTP exporter) with OpenInference's project resource, and two things the SDK leaves
to its user:

- ids planned from the row (trace_ids.py) through the SDK's own ``IdGenerator`` hook, so an annotation can
  name its span without the id travelling anywhere;
- a collector that stops answering never holds a run up: an export that fails drops that batch and every
  later one with one warning (the run's process probed the collector before starting this one); one that
  answers it is busy (Phoenix's 503 while its queue of spans to store is full) is waited for, in this
  process, up to ``BUSY_PATIENCE_S`` a batch.
"""

from __future__ import annotations

import logging
import os
import threading
import time
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

from tasks.core_records import TraceTarget
from tasks.tracing.annotations import AnnotationPoster

EXPORT_TIMEOUT_S = 10.0
"""Per export call (the SDK's exporter retries within it; its own default): a collector busy storing earlier
spans may answer slowly, one that is gone is given up after this."""
FLUSH_EVERY_SPANS = 8_192
"""After this many spans built, the builder waits until they are exported (``built``): the SDK's queue,
twice as long, never fills (a full queue drops spans), and a slow collector slows the trace process, not
the run."""
MAX_QUEUED_SPANS = 2 * FLUSH_EVERY_SPANS
FLUSH_ROUNDS = 10
"""Waits of 3 export time-outs each for the exported spans to catch up with those built."""

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


BUSY_CODES = frozenset({429, 503})
"""What a collector says when it is up but cannot take more now (Phoenix answers 503 while its queue of
spans waiting to be stored, 20,000 by default, is full)."""
def _patience_s(default: float = 60.0) -> float:
    try:
        value = float(os.environ.get("TOOLEVAL_TRACE_PATIENCE_S", default))
    except ValueError:
        return default
    return value if value >= 0 else default


BUSY_PATIENCE_S = _patience_s()
"""How long one batch is offered to a busy collector before the rest of the run's spans are dropped
(``TOOLEVAL_TRACE_PATIENCE_S``, seconds; 60 unless it is a number >= 0)."""


class LastStatus:
    """The HTTP status of the exporter's last answer, read through a ``requests`` response hook on the
    session the exporter is given (None: no answer, e.g. the connection was refused)."""

    def __init__(self) -> None:
        self.code: int | None = None

    def session(self):
        import requests

        session = requests.Session()
        session.hooks["response"].append(self._seen)
        return session

    def _seen(self, response, *args, **kwargs) -> None:
        self.code = response.status_code


class PatientExporter(SpanExporter):
    """The OTLP exporter, patient with a busy collector and not with a gone one: a batch a busy collector
    (429/503) does not take is offered again for up to ``BUSY_PATIENCE_S`` (the trace process waits, the
    run does not); any other failure, or a collector busy for longer, gives one warning, and every later
    batch is dropped at once."""

    def __init__(self, inner: SpanExporter, status: LastStatus, target: TraceTarget, tracing: "RunTracing") -> None:
        self._inner, self._status, self._target, self._tracing = inner, status, target, tracing

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not self._tracing.alive:
            return SpanExportResult.FAILURE
        started = time.monotonic()
        while True:
            self._status.code = None
            result = self._inner.export(spans)
            if result is SpanExportResult.SUCCESS or not self._tracing.alive:
                return result
            busy = self._status.code in BUSY_CODES
            if not busy or time.monotonic() - started >= BUSY_PATIENCE_S:
                break
            time.sleep(1.0)  # the SDK's exporter has already backed off within its own time-out
        code = self._status.code
        why = (f"the collector at {self._target.traces_url} was at capacity (HTTP {code}) for "
               f"{BUSY_PATIENCE_S:.0f} s" if busy else
               f"the collector at {self._target.traces_url} did not accept spans "
               f"({f'HTTP {code}' if code is not None else 'no answer'})")
        self._tracing.give_up(why)
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
        status = LastStatus()
        exporter = OTLPSpanExporter(endpoint=target.traces_url, timeout=EXPORT_TIMEOUT_S, session=status.session())
        self.provider.add_span_processor(BatchSpanProcessor(PatientExporter(exporter, status, target, self),
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
        """Wait until every span built is exported (or tracing gave up): a busy collector slows the builder
        down instead of filling the SDK's queue, which would drop spans without a word."""
        self._unflushed = 0
        for _ in range(FLUSH_ROUNDS):  # each export gives up within BUSY_PATIENCE_S: this ends well before
            if not self.alive or self.provider.force_flush(timeout_millis=int(3 * EXPORT_TIMEOUT_S * 1000)):
                return

    def flush(self) -> None:
        self._send_spans()
        self.annotations.close()

    def shutdown(self) -> None:
        self.provider.shutdown()
