"""OpenAI's Batch API through the ``openai`` SDK: the requests as a JSON Lines file (``purpose="batch"``),
a batch on ``/v1/chat/completions`` with a 24 h window, its results read from the output and error files.

Each batch carries its chunk key in ``metadata`` (``tooleval_chunk``): a process killed after the create
call left but before its answer was journaled finds the batch again by listing the batches."""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping

from tasks.selectors.providers.batch.control import (LIST_SLACK_S, BatchState, Result, BatchWire, control,
                                                     error_text, read_body)
from tasks.selectors.providers.batch.items import BatchItem
from tasks.selectors.providers.openai_chat import DEFAULT_BASE_URL, OpenAIChat

ENDPOINT = "/v1/chat/completions"
CHUNK_KEY = "tooleval_chunk"
ENDED = {"completed", "failed", "expired", "cancelled"}
LINE_STATUS = {"batch_expired": "expired", "batch_cancelled": "canceled"}


class OpenAIBatches(BatchWire):
    provider = "openai"
    default_base_url = DEFAULT_BASE_URL
    chat_class = OpenAIChat

    def line(self, item: BatchItem) -> dict[str, Any]:
        return {"custom_id": item.custom_id, "method": "POST", "url": ENDPOINT, "body": self.body(item)}

    def create(self, chunk_key: str, lines: list[dict[str, Any]], on_file: Callable[[str], None]) -> str:
        data = "".join(json.dumps(line) + "\n" for line in lines).encode()
        uploaded = control(lambda: self.client.files.create(file=("batch.jsonl", data, "application/jsonl"),
                                                            purpose="batch"), self._sleep)
        on_file(uploaded.id)
        batch = control(lambda: self.client.batches.create(
            input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h",
            metadata={CHUNK_KEY: chunk_key}), self._sleep)
        return batch.id

    def find(self, chunk_key: str, n: int, since: float, known: set[str]) -> str | None:
        for batch in control(lambda: self.client.batches.list(limit=100), self._sleep):
            if batch.created_at < since - LIST_SLACK_S:
                return None  # newest first: older ones cannot be this chunk's
            if (batch.metadata or {}).get(CHUNK_KEY) == chunk_key and batch.id not in known:
                return batch.id
        return None

    def state(self, batch_id: str) -> BatchState:
        batch = control(lambda: self.client.batches.retrieve(batch_id), self._sleep)
        problem = None
        if batch.status == "failed":
            errors = [f"{e.code}: {e.message}" for e in ((batch.errors.data or []) if batch.errors else [])]
            problem = "the batch failed: " + ("; ".join(errors) or "no reason given")
        return BatchState(batch.id, batch.status, batch.status in ENDED, problem,
                          {"output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id})

    def cancel(self, batch_id: str) -> None:
        control(lambda: self.client.batches.cancel(batch_id), self._sleep)

    def _lines(self, file_id: str | None) -> list[dict[str, Any]]:
        if not file_id:
            return []
        text = control(lambda: self.client.files.content(file_id), self._sleep).content.decode()
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def results(self, state: BatchState) -> dict[str, Result]:
        found: dict[str, Result] = {}
        for key in ("output_file_id", "error_file_id"):
            for line in self._lines(state.extra.get(key)):
                found[line["custom_id"]] = self.read_line(line)
        return found

    @staticmethod
    def read_line(line: Mapping[str, Any]) -> Result:
        """One line of an output or error file."""
        error, response = line.get("error"), line.get("response") or {}
        if error:
            code = (error.get("code") or "") if isinstance(error, Mapping) else ""
            return LINE_STATUS.get(code, "errored"), None, error_text(error)
        status = response.get("status_code")
        if status == 200:
            return read_body("openai", response.get("body"))
        return "errored", None, f"HTTP {status}: {error_text(response.get('body'))}"
