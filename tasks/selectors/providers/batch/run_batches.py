"""Send chat requests as provider batches and wait for every outcome, surviving a killed process.

``run_batches(provider, items, journal=...)`` lands one ``BatchOutcome`` per item:

1. an item whose outcome the journal already holds is answered from it, never sent again;
2. an item the journal holds in a batch not yet ended is waited on in that batch (a rerun after kill -9);
   a batch whose intent was written but whose id was not (the process died during the create call) is
   looked up at the provider first and adopted when found (an adopted batch whose results hold none of
   its ids was another caller's: its items are then sent); only when it is not found is it sent again;
3. the other items are split by the provider's per-batch limits (requests, bytes); for each batch the
   intent (its custom ids and a hash of its input) is journaled *before* the create call and its batch
   id right after it returns;
4. every batch is polled with backoff until it ends; its results are journaled and read as the
   synchronous call reads a reply. ``should_cancel()`` cancels the batches at the provider; the lines
   that had not run come back 'canceled'.

With ``block=False`` it submits, polls each batch once and returns the outcomes landed so far (items
still waiting are absent): a caller that must not hold a worker for hours calls again later with the same
items, and the journal carries everything between the calls.

It never raises for a failed item or batch: the outcome says what happened, with errors scrubbed of the
key. A batch the provider refused to create is forgotten (a rerun may send its items again); a batch that
could not be polled keeps its journal rows (a rerun picks it up).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

from tasks.selectors.providers.anthropic_messages import AnthropicMessages
from tasks.selectors.providers.batch.anthropic_wire import AnthropicBatches
from tasks.selectors.providers.batch.control import BatchState, BatchWire, Result
from tasks.selectors.providers.batch.items import LIMITS, BatchItem, BatchLimits, BatchOutcome, split
from tasks.selectors.providers.batch.journal import BatchJournal, Chunk
from tasks.selectors.providers.chat_types import ChatReply
from tasks.selectors.providers.openai_chat import OpenAIChat
from tasks.selectors.providers.batch.openai_wire import OpenAIBatches
from tasks.selectors.providers.provider_calls import scrub
from tasks.selectors.providers.retry_policy import classify

WIRES: dict[str, Callable[..., BatchWire]] = {"openai": OpenAIBatches, "anthropic": AnthropicBatches}
READERS: dict[str, Callable[[Mapping[str, Any]], ChatReply]] = {
    "openai": OpenAIChat.read_reply, "anthropic": AnthropicMessages.read_reply}


@dataclass(frozen=True)
class PollPolicy:
    """How often a batch is asked whether it ended: ``first_s``, then ``factor`` times longer, at most
    ``max_s``. A batch that cannot be polled ``max_failures`` times running is left to a rerun."""

    first_s: float = 10.0
    max_s: float = 300.0
    factor: float = 1.5
    max_failures: int = 20
    sleep: Callable[[float], None] = time.sleep


_CREATING: set[str] = set()
"""Chunk keys whose create call a thread of this process is making."""
_CREATING_LOCK = threading.Lock()


@contextmanager
def _creating(chunk_key: str) -> Iterator[None]:
    with _CREATING_LOCK:
        _CREATING.add(chunk_key)
    try:
        yield
    finally:
        with _CREATING_LOCK:
            _CREATING.discard(chunk_key)


def _owner_busy(chunk: Chunk) -> bool:
    """The caller that journaled this intent may still record its batch id: another live process, or a
    thread of this one inside the create call."""
    with _CREATING_LOCK:
        if chunk.chunk_key in _CREATING:
            return True
    return chunk.owner_alive()


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def chunk_key_for(endpoint: str, custom_ids: Sequence[str]) -> str:
    """The journal's key of a batch of these ids at this endpoint ('provider base_url')."""
    return "chunk-" + _digest([endpoint, list(custom_ids)])[:32]


class _Run:
    """One call of ``run_batches``: its wire, journal and the outcomes landed so far."""

    def __init__(self, wire: BatchWire, items: Sequence[BatchItem], journal: BatchJournal, api_key: str,
                 poll: PollPolicy, should_cancel: Callable[[], bool],
                 on_submitted: Callable[[str, int], None] | None, limits: BatchLimits, block: bool = True):
        self.wire, self.journal, self.key, self.poll, self.block = wire, journal, api_key, poll, block
        self.limits = limits
        self.should_cancel, self.on_submitted = should_cancel, on_submitted
        self.endpoint = f"{wire.provider} {wire.base_url}"
        self.items = {item.custom_id: item for item in items}
        if len(self.items) != len(items):
            raise ValueError("two batch items share a custom id")
        self.lines = {cid: wire.line(item) for cid, item in self.items.items()}
        self.hashes = {cid: _digest(line) for cid, line in self.lines.items()}
        self.outcomes: dict[str, BatchOutcome] = {}
        self.active: dict[str, str] = {}
        """chunk key -> batch id of the batches being waited on."""
        self.cancelled = False

    def outcome(self, cid: str, status: str, reply_json: Mapping[str, Any] | None, error: str | None,
                batch_id: str) -> None:
        if cid not in self.items:
            return  # a line of a journaled batch this call did not ask for: journaled, not returned
        reply = None
        if status == "succeeded":
            try:
                reply = READERS[self.wire.provider](reply_json or {})
            except Exception as unreadable:  # a shape the reader does not know: an error row, not a crash
                status = "errored"
                error = f"the reply could not be read: {type(unreadable).__name__}: {unreadable}"
        self.outcomes[cid] = BatchOutcome(cid, status, reply, scrub(error, (self.key,))[:1000] if error else None,
                                          batch_id)

    def fail(self, cids: Sequence[str], error: str, batch_id: str = "") -> None:
        for cid in cids:
            self.outcome(cid, "errored", None, error, batch_id)

    # -- 1. landed ----------------------------------------------------------------------------------------
    def take_landed(self) -> None:
        for cid, landed in self.journal.landed(self.endpoint, self.items).items():
            if landed.body_hash != self.hashes[cid]:
                self.fail([cid], "the journal holds a different request under this custom id", landed.batch_id)
            else:
                self.outcome(cid, landed.status, landed.reply, landed.error, landed.batch_id)

    # -- 2. journaled batches not ended -------------------------------------------------------------------
    def resume(self) -> list[str]:
        """Take up the journal's unfinished batches of these items; the ids to send anew."""
        waiting = [cid for cid in self.items if cid not in self.outcomes]
        fresh = set(waiting)
        for key in sorted(self.journal.chunk_keys(self.endpoint, waiting)):
            chunk = self.journal.chunk(key)
            if chunk is None:
                continue
            if chunk.batch_id is None:
                chunk = self.await_owner(chunk)
            if chunk.batch_id is None and _owner_busy(chunk):  # not blocking: the owner may yet record it
                fresh.difference_update(chunk.custom_ids)
                continue
            if chunk.batch_id is None:
                try:
                    found = self.wire.find(chunk.chunk_key, len(chunk.custom_ids), chunk.intent_at,
                                           self.journal.batch_ids(self.endpoint))
                except Exception as error:  # the listing failed: the intent stays for a rerun to look up
                    fresh.difference_update(chunk.custom_ids)
                    self.fail(chunk.custom_ids, f"the batch of this request could not be looked up: "
                                                f"{classify(error).detail}: {error}")
                    continue
                if found is None:  # the create call never reached the provider: send these items again
                    self.journal.release(chunk.chunk_key)
                    continue
                self.journal.record_batch(chunk.chunk_key, found, adopted=True)
                chunk = self.journal.chunk(chunk.chunk_key) or chunk
            fresh.difference_update(chunk.custom_ids)
            changed = [cid for cid in chunk.custom_ids if cid in self.items and not self._same(cid, chunk)]
            self.fail(changed, "the journal holds a different request under this custom id", chunk.batch_id or "")
            self.active[chunk.chunk_key] = chunk.batch_id or ""
        return [cid for cid in waiting if cid in fresh]

    def _same(self, cid: str, chunk: Chunk) -> bool:
        stored = self.journal.item_hash(self.endpoint, cid)
        return stored is None or stored == self.hashes[cid]

    def await_owner(self, chunk: Chunk) -> Chunk:
        """Wait while the live process that wrote the intent may still record the batch id."""
        delay = self.poll.first_s
        while self.block and chunk.batch_id is None and _owner_busy(chunk):
            self.poll.sleep(delay)
            delay = min(delay * self.poll.factor, self.poll.max_s)
            chunk = self.journal.chunk(chunk.chunk_key) or chunk
        return chunk

    # -- 3. new batches -----------------------------------------------------------------------------------
    def submit_new(self, cids: Sequence[str]) -> None:
        limits = self.limits
        sizes = [len(json.dumps(self.lines[cid]).encode()) + 1 for cid in cids]
        placed: set[int] = set()
        for indices in split(sizes, limits):
            placed.update(indices)
            self.submit([cids[i] for i in indices])
        self.fail([cid for i, cid in enumerate(cids) if i not in placed],
                  f"the request alone is larger than a batch may be ({limits.max_bytes} bytes)")

    def claim(self, cids: list[str]) -> tuple[list[str], str]:
        """Journal the intent of a batch of ``cids`` (those another caller has not journaled meanwhile: its
        batches are waited on instead); (the ids claimed, the chunk key)."""
        for _ in range(2):
            chunk_key = chunk_key_for(self.endpoint, cids)
            if self.journal.claim(self.endpoint, chunk_key, self.items[cids[0]].request.model,
                                  _digest([self.hashes[cid] for cid in cids]),
                                  [(cid, self.hashes[cid], self.items[cid].label) for cid in cids]):
                return cids, chunk_key
            leftovers = set(self.resume())
            cids = [cid for cid in cids if cid in leftovers]
            if not cids:
                break
        return [], ""

    def submit(self, cids: list[str]) -> None:
        cids, chunk_key = self.claim(cids)
        if cids:
            with _creating(chunk_key):
                self.create(cids, chunk_key)

    def create(self, cids: list[str], chunk_key: str) -> None:
        try:
            batch_id = self.wire.create(chunk_key, [self.lines[cid] for cid in cids],
                                        lambda file_id: self.journal.record_file(chunk_key, file_id))
        except Exception as error:  # the SDKs' errors: outcomes, not a crash
            failure = classify(error)
            detail = f"batch not submitted: {failure.detail}: {error}"
            if not failure.retryable:  # refused; a retryable failure may have created it: a rerun looks it up
                self.journal.release(chunk_key)
            self.fail(cids, detail)
            return
        self.journal.record_batch(chunk_key, batch_id)
        self.active[chunk_key] = batch_id
        if self.on_submitted is not None:
            self.on_submitted(batch_id, len(cids))

    # -- 4. waiting ---------------------------------------------------------------------------------------
    def wait(self) -> None:
        failures = {key: 0 for key in self.active}
        delay = self.poll.first_s
        while self.active:
            if not self.cancelled and self.should_cancel():
                self.cancel_all()
            for chunk_key, batch_id in list(self.active.items()):
                try:
                    state = self.wire.state(batch_id)
                    if state.ended:
                        results = self.wire.results(state)
                        del self.active[chunk_key]  # before landing, which may send a new batch of its items
                        self.land(chunk_key, state, results)
                    failures[chunk_key] = 0
                except Exception as error:
                    failures[chunk_key] = failures.get(chunk_key, 0) + 1
                    if failures[chunk_key] >= self.poll.max_failures or not classify(error).retryable:
                        chunk = self.journal.chunk(chunk_key)
                        self.fail(chunk.custom_ids if chunk else [], f"batch {batch_id} could not be polled: "
                                  f"{classify(error).detail}: {error}", batch_id)
                        self.active.pop(chunk_key, None)
            if self.active and not self.block:
                return
            if self.active:
                self.poll.sleep(delay)
                delay = min(delay * self.poll.factor, self.poll.max_s)

    def cancel_all(self) -> None:
        self.cancelled = True
        for chunk_key, batch_id in self.active.items():
            self.journal.request_cancel(chunk_key)
            try:
                self.wire.cancel(batch_id)
            except Exception:  # already ended, or unreachable: the poll says which
                pass

    def land(self, chunk_key: str, state: BatchState, results: dict[str, Result]) -> None:
        chunk = self.journal.chunk(chunk_key)
        if chunk is not None and chunk.adopted and results and not set(results) & set(chunk.custom_ids):
            # the batch the listing offered was another caller's: this chunk's create never reached the
            # provider, so its items are sent now
            self.journal.release(chunk_key)
            again = [cid for cid in chunk.custom_ids if cid in self.items]
            if self.cancelled:
                self.fail(again, "not submitted: the run was cancelled")
            elif again:
                self.submit_new(again)
            return
        cids = chunk.custom_ids if chunk else tuple(results)
        missing = {"expired": "expired", "cancelled": "canceled", "canceled": "canceled"}.get(state.status)
        rows = []
        for cid in cids:
            if cid in results:
                status, reply, error = results[cid]
            elif state.problem:
                status, reply, error = "errored", None, state.problem
            elif missing:
                status, reply, error = missing, None, f"the batch was {state.status} before this request ran"
            else:
                status, reply, error = "errored", None, "the batch ended without a result for this request"
            error = scrub(error, (self.key,))[:1000] if error else None
            rows.append((cid, status, reply, error))
            self.outcome(cid, status, reply, error, state.batch_id)
        self.journal.land(chunk_key, rows)


def run_batches(provider: str, items: Sequence[BatchItem], *, journal: BatchJournal, base_url: str | None,
                api_key: str, options: Mapping[str, Any] | None = None, poll: PollPolicy = PollPolicy(),
                should_cancel: Callable[[], bool] = lambda: False,
                on_submitted: Callable[[str, int], None] | None = None,
                limits: BatchLimits | None = None, block: bool = True) -> dict[str, BatchOutcome]:
    """One outcome per item, by custom id, in the items' order (see the module). ``provider``: 'openai' |
    'anthropic'; the items are of one model; ``limits`` replaces the provider's per-batch limits
    (``items.LIMITS``); ``block=False`` returns without waiting for the batches to end."""
    if provider not in WIRES:
        raise ValueError(f"no batch API for provider {provider!r}")
    wire = WIRES[provider](api_key, base_url, dict(options or {}), sleep=poll.sleep)
    run = _Run(wire, items, journal, api_key, poll, should_cancel, on_submitted, limits or LIMITS[provider], block)
    run.take_landed()
    fresh = run.resume()
    if fresh and not should_cancel():
        run.submit_new(fresh)
    elif fresh:
        run.fail(fresh, "not submitted: the run was cancelled")
    run.wait()
    for cid in run.items if block else ():  # nothing may be left without an outcome
        if cid not in run.outcomes:
            run.fail([cid], "no outcome: the batch holding this request was not found")
    return {cid: run.outcomes[cid] for cid in run.items if cid in run.outcomes}

