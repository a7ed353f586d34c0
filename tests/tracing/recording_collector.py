"""A loopback OTLP/HTTP collector that records what it is sent: the spans of ``/v1/traces`` (decoded with
OpenTelemetry's own protobuf classes) and the annotations of Phoenix's ``/v1/span_annotations``.

    with RecordingCollector(busy_first=3) as collector:   # 503 (at capacity) to the first 3 span exports
        collector.otlp, collector.spans, collector.annotations, collector.busy_answers
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class RecordingCollector:
    def __init__(self, busy_first: int = 0) -> None:
        """``busy_first``: answer the first so many span exports 503, as Phoenix does while its queue of
        spans to store is full (-1: always)."""
        self.busy_first = busy_first
        self.busy_answers = 0
        self.spans: list = []
        self.annotations: list[dict] = []
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.startswith("/v1/traces") and collector._busy():
                    self._answer(b'{"detail": "Server is at capacity"}', "application/json", 503)
                elif self.path.startswith("/v1/traces"):
                    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

                    request = ExportTraceServiceRequest.FromString(body)
                    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
                    with collector._lock:
                        collector.spans.extend(spans)
                    self._answer(b"", "application/x-protobuf")
                elif self.path.startswith("/v1/span_annotations"):
                    with collector._lock:
                        collector.annotations.extend(json.loads(body)["data"])
                    self._answer(b'{"data": []}', "application/json")
                else:
                    self.send_response(404)
                    self.end_headers()

            def _answer(self, body: bytes, content_type: str, status: int = 200) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def _busy(self) -> bool:
        with self._lock:
            if self.busy_first < 0 or self.busy_answers < self.busy_first:
                self.busy_answers += 1
                return True
            return False

    @property
    def otlp(self) -> str:
        return f"otlp://127.0.0.1:{self.server.server_address[1]}"

    def span_ids(self) -> set[str]:
        with self._lock:
            return {span.span_id.hex() for span in self.spans}

    def __enter__(self) -> "RecordingCollector":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
