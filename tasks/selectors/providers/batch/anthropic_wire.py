"""Anthropic's Message Batches API through the ``anthropic`` SDK: the requests in the create call, the
results streamed as JSON Lines (succeeded / errored / canceled / expired per custom id).

A message batch has no metadata, so a batch whose create answer was lost (the process killed while the
call was in flight) is recognised in the listing by what it shows: created after the intent, as many
requests as the chunk, and held by no other chunk of the journal; its results confirm it (``run_batches``
sends the items after all when they hold none of the chunk's ids)."""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping

from tasks.selectors.providers.anthropic_messages import DEFAULT_BASE_URL, AnthropicMessages
from tasks.selectors.providers.batch.control import (LIST_SLACK_S, BatchState, Result, BatchWire, control,
                                                     error_text, read_body)
from tasks.selectors.providers.batch.items import BatchItem


class AnthropicBatches(BatchWire):
    provider = "anthropic"
    default_base_url = DEFAULT_BASE_URL
    chat_class = AnthropicMessages

    def line(self, item: BatchItem) -> dict[str, Any]:
        return {"custom_id": item.custom_id, "params": self.body(item)}

    def create(self, chunk_key: str, lines: list[dict[str, Any]], on_file: Callable[[str], None]) -> str:
        return control(lambda: self.client.messages.batches.create(requests=lines), self._sleep).id

    def find(self, chunk_key: str, n: int, since: float, known: set[str]) -> str | None:
        candidates = []
        for batch in control(lambda: self.client.messages.batches.list(limit=100), self._sleep):
            created = batch.created_at.timestamp()
            if created < since - LIST_SLACK_S:
                break  # newest first
            counts = batch.request_counts
            total = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
            if total == n and batch.id not in known:
                candidates.append((abs(created - since), batch.id))
        return min(candidates)[1] if candidates else None

    def state(self, batch_id: str) -> BatchState:
        batch = control(lambda: self.client.messages.batches.retrieve(batch_id), self._sleep)
        return BatchState(batch.id, batch.processing_status, batch.processing_status == "ended",
                          extra={"results_url": batch.results_url})

    def cancel(self, batch_id: str) -> None:
        control(lambda: self.client.messages.batches.cancel(batch_id), self._sleep)

    def results(self, state: BatchState) -> dict[str, Result]:
        """The results file read as JSON, as a synchronous reply is (``results()`` would build the SDK's
        typed models, which reshape the malformed blocks a row must see as they came)."""
        import httpx2

        url = state.extra.get("results_url")
        if not url:
            return {}
        response = control(lambda: self.client.get(url, cast_to=httpx2.Response,
                                                    options={"headers": {"Accept": "application/binary"}}),
                           self._sleep)
        lines = [json.loads(line) for line in response.content.decode().splitlines() if line.strip()]
        return {line["custom_id"]: self.read_line(line) for line in lines}

    @staticmethod
    def read_line(line: Mapping[str, Any]) -> Result:
        result = line.get("result") or {}
        kind = result.get("type")
        if kind == "succeeded":
            return read_body("anthropic", result.get("message"))
        if kind in ("canceled", "expired"):
            return kind, None, f"the request was {kind} before it ran"
        return "errored", None, error_text(result.get("error") or {"message": f"result type {kind!r}"})
