"""The loopback server's batch endpoints: OpenAI's Files and Batches APIs and Anthropic's Message Batches,
well enough for the official SDKs. Each line of a batch is answered by the same ``Script`` the synchronous
endpoints use (``ProviderServer``, which this extends), so a batch and a synchronous run give the same
replies. Nothing leaves 127.0.0.1.

    with BatchServer(script, api_key=KEY, polls_to_end=2) as server:
        openai.OpenAI(base_url=server.openai_url, ...).files.create(...); .batches.create(...)
        anthropic.Anthropic(base_url=server.anthropic_url, ...).messages.batches.create(...)

A batch runs as it is polled: each retrieve runs the next share of its lines (``polls_to_end`` retrieves
run them all), so a batch cancelled or expired part way has partial results. Behaviours on request:

- ``expire_at_poll=k``: at the k-th retrieve the batch expires; lines not yet run are ``expired``;
- ``cancel``: the lines not yet run come back ``canceled`` (OpenAI: ``cancelling``, then ``cancelled``);
- per-line errors: a scripted ``Reply(status=...)`` or a schema the real service refuses is an errored line;
- ``max_requests`` / ``max_bytes``: a batch over them fails (OpenAI: status ``failed`` with its errors;
  Anthropic: HTTP 413 on create), as the services refuse it;
- ``fail_retrieves=k``: the first k retrieves of each batch answer HTTP 503 (Retry-After 0);
- ``hold_batches``: no retrieve runs lines while set (a run waits on its batch for as long as a test needs);
- ``hold_creates``: a create registers the batch, sets ``create_arrived`` and answers only once
  ``release_creates`` is set (a client killed in between never learns the batch id);
- a wrong key is HTTP 401 on every endpoint.

``submissions`` counts, per custom id, how many created batches held it: a request sent twice shows as 2.
It also runs as a process (every line calls the first offered tool):

    python -m tests.batch_server --polls-to-end 2      (prints "port <n>", serves until killed)
"""

from __future__ import annotations

import argparse
import email.parser
import email.policy
import itertools
import json
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler
from typing import Any, Mapping
from urllib.parse import parse_qs, urlsplit

from tests.provider_server import HOLD_LIMIT_S, ProviderServer, Script, first_tool, serve_until_killed


@dataclass
class Batch:
    """One batch as the server holds it."""

    id: str
    api: str
    lines: list[tuple[str, dict[str, Any]]]
    """(custom id, request body) in input order."""
    headers: dict[str, str]
    created_at: float
    metadata: dict[str, str] = field(default_factory=dict)
    input_file_id: str | None = None
    polls: int = 0
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    """custom id -> its result, as the API writes it."""
    kinds: dict[str, str] = field(default_factory=dict)
    """custom id -> 'succeeded' | 'errored' | 'expired' | 'canceled'."""
    status: str = "in_progress"
    problem: list[dict[str, Any]] | None = None
    cancel_requested: bool = False
    output_file_id: str | None = None
    error_file_id: str | None = None

    @property
    def ended(self) -> bool:
        return self.status in ("completed", "failed", "expired", "cancelled", "ended")


class BatchServer(ProviderServer):
    """``ProviderServer`` with the batch endpoints of both APIs."""

    def __init__(self, script: Script = first_tool, api_key: str | None = None, polls_to_end: int = 2,
                 expire_at_poll: int | None = None, max_requests: int | None = None, max_bytes: int | None = None,
                 fail_retrieves: int = 0, **kwargs: Any):
        super().__init__(script, api_key=api_key, **kwargs)
        self.fail_retrieves = fail_retrieves
        self.failed_retrieves: Counter[str] = Counter()
        self.polls_to_end, self.expire_at_poll = max(polls_to_end, 1), expire_at_poll
        self.max_requests, self.max_bytes = max_requests, max_bytes
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, Batch] = {}
        self.submissions: Counter[str] = Counter()
        self.hold_batches = threading.Event()
        self.hold_creates = threading.Event()
        self.create_arrived = threading.Event()
        self.release_creates = threading.Event()
        self._ids = itertools.count(1)
        self._batch_lock = threading.Lock()

    def __exit__(self, *exc: object) -> None:
        self.release_creates.set()
        super().__exit__(*exc)

    # -- state --------------------------------------------------------------------------------------------
    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    def _register(self, api: str, lines: list[tuple[str, dict[str, Any]]], headers: Mapping[str, str],
                  metadata: Mapping[str, str] | None = None, input_file_id: str | None = None) -> Batch:
        batch = Batch(self._new_id("batch_" if api == "openai" else "msgbatch_"), api, lines,
                      {k.lower(): v for k, v in headers.items()}, time.time(), dict(metadata or {}), input_file_id)
        with self._batch_lock:
            self.batches[batch.id] = batch
            self.submissions.update(cid for cid, _ in lines)
        return batch

    def _run_line(self, batch: Batch, cid: str, body: dict[str, Any]) -> None:
        api = batch.api
        seen = self.parse(api, body, batch.headers)
        if self.record:
            with self._lock:
                self.seen.append(seen)
        refusal = self.refuse_schema(api, body)
        reply = None if refusal else self.script(seen)
        if refusal or (reply is not None and reply.status is not None):
            status = 400 if refusal else reply.status  # type: ignore[union-attr]
            message = refusal or reply.error_message  # type: ignore[union-attr]
            kind = "invalid_request_error" if status == 400 else (
                "rate_limit_error" if status == 429 else "api_error")
            self._land(batch, cid, "errored", status=status, error={"type": kind, "message": message})
            return
        assert reply is not None
        payload = self.openai_body(seen, reply) if api == "openai" else self.anthropic_body(seen, reply)
        if reply.reshape is not None:
            payload = reply.reshape(payload)
        self._land(batch, cid, "succeeded", payload=payload)

    def _land(self, batch: Batch, cid: str, kind: str, payload: dict[str, Any] | None = None,
              status: int | None = None, error: dict[str, Any] | None = None) -> None:
        batch.kinds[cid] = kind
        n = len(batch.results) + 1
        if batch.api == "openai":
            line: dict[str, Any] = {"id": f"batch_req_{n}", "custom_id": cid, "response": None, "error": None}
            if kind == "succeeded":
                line["response"] = {"status_code": 200, "request_id": f"req_{n}", "body": payload}
            elif kind == "errored":
                line["response"] = {"status_code": status, "request_id": f"req_{n}",
                                    "body": {"error": {**(error or {}), "param": None, "code": None}}}
            else:
                code = "batch_expired" if kind == "expired" else "batch_cancelled"
                line["error"] = {"code": code, "message": f"This request was not executed ({code})."}
        else:
            result: dict[str, Any] = {"type": kind}
            if kind == "succeeded":
                result["message"] = payload
            elif kind == "errored":
                result["error"] = {"type": "error", "error": error}
            line = {"custom_id": cid, "result": result}
        batch.results[cid] = line

    def _advance(self, batch: Batch) -> None:
        """One retrieve: run the next share of the lines, or end the batch (expired, cancelled, done)."""
        with self._batch_lock:
            if batch.ended or self.hold_batches.is_set():
                return
            batch.polls += 1
            pending = [(cid, body) for cid, body in batch.lines if cid not in batch.kinds]
            if batch.cancel_requested:
                for cid, _ in pending:
                    self._land(batch, cid, "canceled")
                self._finish(batch, "cancelled")
                return
            if self.expire_at_poll is not None and batch.polls >= self.expire_at_poll:
                for cid, _ in pending:
                    self._land(batch, cid, "expired")
                self._finish(batch, "expired")
                return
            share = -(-len(batch.lines) // self.polls_to_end)
            for cid, body in pending[:share]:
                self._run_line(batch, cid, body)
            if len(batch.kinds) == len(batch.lines):
                self._finish(batch, "completed")

    def _finish(self, batch: Batch, status: str) -> None:
        if batch.api == "openai":
            batch.status = status
            good = [batch.results[c] for c, _ in batch.lines if batch.kinds.get(c) == "succeeded"]
            bad = [batch.results[c] for c, _ in batch.lines if c in batch.kinds and batch.kinds[c] != "succeeded"]
            for lines, attr in ((good, "output_file_id"), (bad, "error_file_id")):
                if lines:
                    file_id = self._new_id("file-")
                    self.files[file_id] = "".join(json.dumps(line) + "\n" for line in lines).encode()
                    setattr(batch, attr, file_id)
        else:
            batch.status = "ended"

    # -- the JSON the APIs return -------------------------------------------------------------------------
    @staticmethod
    def _rfc3339(seconds: float) -> str:
        return datetime.fromtimestamp(seconds, timezone.utc).isoformat().replace("+00:00", "Z")

    def openai_batch(self, batch: Batch) -> dict[str, Any]:
        counts = Counter(batch.kinds.values())
        status = "cancelling" if batch.cancel_requested and not batch.ended else batch.status
        return {"id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions",
                "errors": {"object": "list", "data": batch.problem} if batch.problem else None,
                "input_file_id": batch.input_file_id or "", "completion_window": "24h", "status": status,
                "output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id,
                "created_at": int(batch.created_at), "expires_at": int(batch.created_at) + 86400,
                "request_counts": {"total": len(batch.lines), "completed": counts["succeeded"],
                                   "failed": len(batch.kinds) - counts["succeeded"]},
                "metadata": batch.metadata or None}

    def anthropic_batch(self, batch: Batch, host: str) -> dict[str, Any]:
        counts = Counter(batch.kinds.values())
        ended = batch.status == "ended"
        status = "canceling" if batch.cancel_requested and not ended else batch.status
        return {"id": batch.id, "type": "message_batch", "processing_status": status,
                "request_counts": {"processing": len(batch.lines) - len(batch.kinds),
                                   "succeeded": counts["succeeded"], "errored": counts["errored"],
                                   "canceled": counts["canceled"], "expired": counts["expired"]},
                "created_at": self._rfc3339(batch.created_at), "expires_at": self._rfc3339(batch.created_at + 86400),
                "ended_at": self._rfc3339(time.time()) if ended else None, "archived_at": None,
                "cancel_initiated_at": self._rfc3339(time.time()) if batch.cancel_requested else None,
                "results_url": f"http://{host}/v1/messages/batches/{batch.id}/results" if ended else None}

    def render(self, batch: Batch, host: str) -> dict[str, Any]:
        return self.openai_batch(batch) if batch.api == "openai" else self.anthropic_batch(batch, host)

    def listing_page(self, api: str, query: Mapping[str, list[str]], host: str) -> dict[str, Any]:
        """One page of the API's batch listing, newest first (OpenAI pages with ``after``, Anthropic with
        ``after_id``)."""
        after = (query.get("after" if api == "openai" else "after_id") or [None])[0]
        limit = int((query.get("limit") or ["20"])[0])
        with self._batch_lock:
            newest = sorted((b for b in self.batches.values() if b.api == api), key=lambda b: b.id, reverse=True)
        if after:
            ids = [b.id for b in newest]
            newest = newest[ids.index(after) + 1:] if after in ids else []
        data = [self.render(b, host) for b in newest[:limit]]
        page = {"data": data, "has_more": len(newest) > limit, "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None}
        return {"object": "list", **page} if api == "openai" else page

    # -- creating -----------------------------------------------------------------------------------------
    def _too_big(self, n: int, size: int) -> str | None:
        if self.max_requests is not None and n > self.max_requests:
            return f"the batch holds {n} requests, more than {self.max_requests}"
        if self.max_bytes is not None and size > self.max_bytes:
            return f"the batch input is {size} bytes, more than {self.max_bytes}"
        return None

    def create_openai(self, body: dict[str, Any], headers: Mapping[str, str]) -> tuple[int, dict[str, Any]]:
        data = self.files.get(str(body.get("input_file_id")))
        if data is None:
            return 400, {"error": {"message": "no such input file", "type": "invalid_request_error"}}
        lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        batch = self._register("openai", [(line["custom_id"], line["body"]) for line in lines], headers,
                               body.get("metadata"), body.get("input_file_id"))
        models = {line["body"].get("model") for line in lines}
        problem = self._too_big(len(lines), len(data)) or (
            "a batch file must use one model" if len(models) > 1 else None) or next(
            (f"line {i + 1}: url must be /v1/chat/completions" for i, line in enumerate(lines)
             if line.get("url") != body.get("endpoint")), None)
        if problem:
            batch.problem = [{"code": "invalid_batch", "message": problem, "line": None, "param": None}]
            batch.status = "failed"
        return 200, self.openai_batch(batch)

    def create_anthropic(self, body: dict[str, Any], size: int, headers: Mapping[str, str],
                         host: str) -> tuple[int, dict[str, Any]]:
        requests = body.get("requests") or []
        problem = self._too_big(len(requests), size)
        if problem:
            return 413, {"type": "error", "error": {"type": "request_too_large", "message": problem}}
        ids = [r.get("custom_id") for r in requests]
        if len(set(ids)) != len(ids):
            return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                                    "message": "custom_id must be unique within a batch"}}
        batch = self._register("anthropic", [(r["custom_id"], r["params"]) for r in requests], headers)
        return 200, self.anthropic_batch(batch, host)

    def upload(self, content_type: str, data: bytes) -> tuple[int, dict[str, Any]]:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + data)
        fields: dict[str, Any] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[name] = part.get_payload(decode=True)
        if (fields.get("purpose") or b"").decode() != "batch" or "file" not in fields:
            return 400, {"error": {"message": "expected a file with purpose 'batch'", "type": "invalid_request_error"}}
        file_id = self._new_id("file-")
        self.files[file_id] = fields["file"]
        return 200, {"id": file_id, "object": "file", "bytes": len(fields["file"]), "created_at": int(time.time()),
                     "filename": "batch.jsonl", "purpose": "batch", "status": "processed"}

    # -- routes -------------------------------------------------------------------------------------------
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self
        Base: Any = super()._handler_class()

        class Handler(Base):
            def _route(self) -> tuple[str, list[str], dict[str, list[str]]] | None:
                parts = urlsplit(self.path)
                path = parts.path.rstrip("/")
                if path.startswith("/v1/messages/batches"):
                    return "anthropic", path[len("/v1/messages/batches"):].strip("/").split("/"), parse_qs(parts.query)
                for prefix in ("/v1/batches", "/v1/files"):
                    if path.startswith(prefix):
                        rest = path[len(prefix):].strip("/").split("/")
                        return "openai", [prefix.rsplit("/", 1)[1], *rest], parse_qs(parts.query)
                return None

            def _authorized(self, api: str) -> bool:
                if server._authorized(self.headers, api):
                    return True
                presented = (self.headers.get("Authorization", "").removeprefix("Bearer ")
                             or self.headers.get("x-api-key", ""))
                # as the real services do, the message echoes the key presented: clients must scrub it
                self._error(api, 401, f"Incorrect API key provided: {presented}", "authentication_error", {})
                return False

            def _serve(self, fallback: Any, handle: Any) -> None:
                route = self._route()
                if route is None:
                    fallback()  # the synchronous endpoints
                else:
                    handle(*route)

            def do_GET(self) -> None:  # noqa: N802
                self._serve(super().do_GET, self._batch_get)

            def do_POST(self) -> None:  # noqa: N802
                self._serve(super().do_POST, self._batch_post)

            def _batch_get(self, api: str, parts: list[str], query: dict[str, list[str]]) -> None:
                if not self._authorized(api):
                    return
                host = self.headers.get("Host", f"127.0.0.1:{server.port}")
                if api == "openai" and parts[0] == "files" and len(parts) == 3 and parts[2] == "content":
                    data = server.files.get(parts[1])
                    if data is None:
                        self._error(api, 404, "no such file", "not_found_error", {})
                    else:
                        self._send_bytes(200, data, "application/octet-stream")
                    return
                if api == "openai" and parts[0] != "batches":
                    self._error(api, 404, f"no route {self.path}", "not_found_error", {})
                    return
                target = parts[1:] if api == "openai" else parts
                if target == [""]:
                    self._send(200, server.listing_page(api, query, host))
                    return
                batch = server.batches.get(target[0])
                if batch is None:
                    self._error(api, 404, "no such batch", "not_found_error", {})
                    return
                if api == "anthropic" and target[1:] == ["results"]:
                    if batch.status != "ended":
                        self._error(api, 400, "the batch is still processing", "invalid_request_error", {})
                        return
                    lines = [batch.results[c] for c, _ in batch.lines if c in batch.results]
                    self._send_bytes(200, "".join(json.dumps(line) + "\n" for line in lines).encode(),
                                     "application/binary")
                    return
                if server.failed_retrieves[batch.id] < server.fail_retrieves:
                    server.failed_retrieves[batch.id] += 1
                    self._error(api, 503, "overloaded", "overloaded_error", {"Retry-After": "0"})
                    return
                server._advance(batch)
                self._send(200, server.render(batch, host))

            def _batch_post(self, api: str, parts: list[str], query: dict[str, list[str]]) -> None:
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not self._authorized(api):
                    return
                host = self.headers.get("Host", f"127.0.0.1:{server.port}")
                if api == "openai" and parts == ["files", ""]:
                    status, payload = server.upload(self.headers.get("Content-Type", ""), data)
                elif api == "openai" and parts == ["batches", ""]:
                    status, payload = server.create_openai(json.loads(data or b"{}"), self.headers)
                elif api == "anthropic" and parts == [""]:
                    status, payload = server.create_anthropic(json.loads(data or b"{}"), len(data), self.headers,
                                                              host)
                elif parts[-1] == "cancel" and (api == "anthropic" or parts[0] == "batches"):
                    batch = server.batches.get(parts[-2])
                    if batch is None:
                        self._error(api, 404, "no such batch", "not_found_error", {})
                        return
                    if not batch.ended:
                        batch.cancel_requested = True
                    status, payload = 200, server.render(batch, host)
                else:
                    self._error(api, 404, f"no route {self.path}", "not_found_error", {})
                    return
                is_create = (parts == ["batches", ""]) if api == "openai" else parts == [""]
                if is_create and server.hold_creates.is_set():
                    server.create_arrived.set()
                    server.release_creates.wait(HOLD_LIMIT_S)
                self._send(status, payload)

        return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the loopback OpenAI/Anthropic API with its batch "
                                                 "endpoints (every line calls the first offered tool).")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--polls-to-end", type=int, default=2,
                        help="retrieves of a batch that run all its lines (default 2)")
    args = parser.parse_args(argv)
    return serve_until_killed(BatchServer(first_tool, port=args.port, polls_to_end=args.polls_to_end, record=False))


if __name__ == "__main__":
    sys.exit(main())
