"""A hosted arm's unit sent through the provider's batch API instead of one call per request.

A request's lines (an LLM router's, the chat model's, the judge's votes) are reserved whole in the run's
ledger at their batch prices before anything is submitted (a request the caps refuse lands as ``budget
reached``). An offline router routes the whole unit locally; an LLM router's requests go first, as a batch
round of their own. Then every chat request is built exactly as its call would be (``ChatSelector.decided``)
and handed to ``batch.run_batches``, which journals each batch around its submission (``batch_journal.sqlite``,
beside the selection cache), so a rerun of the same command picks the batch up instead of submitting it
again. A judged arm's replies with a choice are kept (``BatchScope.on_chat_stage``) and judged in a third
round (``batch_judge.py``).

Each outcome becomes a Selection through the same reading as a call's reply (``read_reply``), costed at the
batch price, with ``sent_as='batch'`` and the batch id. A request whose batch line errored, expired or was
canceled at the provider is sent again as a call (``sent_as='call_after_batch'``, the failed line counted in
``retries``); one canceled because the run is stopping lands as an error row (never cached).

A custom id is made of the experiment, the arm, the seed and the request's cache key, so a rerun's requests
are the ones its journal holds (with ``--no-cache`` the run id takes the experiment's place). A detached
unit (``BatchSend.detach``) submits its batches and polls each once; a request whose batch has not ended
raises ``BatchesPending``, and a rerun of the same command picks the batches up.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from schemas.selection.rows import Selection
from tasks.selectors.base import SelectionInput
from tasks.selectors.providers.call_budget import BUDGET_REACHED, BatchScope, Reservation, RunLedger
from tasks.selectors.providers.judge import Unjudged
from tasks.selectors.providers.chat_options import is_custom_server
from tasks.selectors.providers.pinned_models import served_evidence
from tasks.selectors.providers.pricing import ModelPrice, price_for
from tasks.selectors.providers.provider_calls import CallResult

if TYPE_CHECKING:
    from tasks.selectors.providers.chat_selector import ChatSelector

JOURNAL_FILE = "batch_journal.sqlite"
"""The batch journal's file, beside the selection cache and the run ledger."""
ROUTER_TURN = 1
"""The custom ids' turn of an LLM router's batch line (a chat line's is 0)."""
STOPPED = "batch canceled: the run was stopped"
"""The detail of a row whose batch request was canceled because the run stopped (an error: never cached)."""
CANCELED_POLL_S = 5.0
"""The longest wait between polls of a batch once its cancel was sent."""

_stop = threading.Event()
_waiters: set["_Waiter"] = set()
_waiters_lock = threading.Lock()


def cancel_waiting_batches(timeout_s: float = 3.0) -> int:
    """Have every unit of this process that waits on a batch cancel it at the provider (a stopping run), and
    wait up to ``timeout_s`` for their cancel calls to return; how many waited."""
    _stop.set()
    with _waiters_lock:
        waiting = list(_waiters)
    deadline = time.monotonic() + timeout_s
    for waiter in waiting:
        waiter.cancel_sent.wait(max(deadline - time.monotonic(), 0.0))
    return len(waiting)


class BatchesPending(Exception):
    """A detached unit's requests wait on batches still running at the provider (their ids)."""

    def __init__(self, batch_ids: Sequence[str]):
        super().__init__(f"{len(batch_ids)} batches still running at the provider")
        self.batch_ids = tuple(sorted(set(batch_ids)))


def stop_requested() -> bool:
    return _stop.is_set()


class _Waiter:
    """One unit's wait on its batches: asked to cancel by the run's stop or the model's halt, and woken at
    once from a poll's sleep when the run stops."""

    def __init__(self, send: "BatchSend", halted: Callable[[], object]):
        self.send, self.halted = send, halted
        self.asked = False
        self.cancel_sent = threading.Event()
        """Set at the first sleep after the cancel was asked for: the cancel calls have returned by then."""

    def should_cancel(self) -> bool:
        if not self.asked and (_stop.is_set() or self.send.should_cancel() or self.halted()):
            self.asked = True
        return self.asked

    def sleep(self, seconds: float) -> None:
        if self.asked:
            self.cancel_sent.set()
            time.sleep(min(seconds, CANCELED_POLL_S))  # the provider ends a canceled batch soon
        else:
            _stop.wait(seconds)


@dataclass(frozen=True)
class BatchSend:
    """What a unit tells a hosted selector so it can send its requests as a batch (``BatchScope.batch``)."""

    journal_path: Path | None
    """The journal's file (None: a temporary one, for a ledger kept in memory)."""
    run: str
    """The custom ids' run part: the experiment's name (or the run id when nothing is cached)."""
    arm: str
    seed: int
    keys: Sequence[str]
    """Per input of the batch: its cache key (what makes a request the same request on a rerun)."""
    should_cancel: Callable[[], bool] = lambda: False
    """Besides the process's stop (``cancel_waiting_batches``): cancel the unit's batches when this says so."""
    detach: bool = False
    """Submit and poll once instead of waiting (``batch_wait: detach``): requests still waiting raise
    ``BatchesPending``."""


def why_calls(selector: "ChatSelector") -> str | None:
    """Why an arm asked to batch sends calls instead (None: it batches): a model (chat, LLM router or judge)
    with no batch price is not batched (the cost could not be stated)."""
    for caller in _callers(selector):
        try:
            price_for(caller.model_id, caller.options, batch=True)
        except (KeyError, FileNotFoundError, ValueError):
            return f"{caller.model_id} has no batch price: sent as synchronous calls"
    return None


def _callers(selector: "ChatSelector") -> list[Any]:
    """The callers an arm's batch lines go to: the chat model's, its LLM router's, its judge's."""
    return [selector.caller] + [x.caller for x in (llm_router(selector), selector.judge) if x is not None]


def llm_router(selector: "ChatSelector") -> Any:
    """The arm's LLM router, if it has one (its calls go as a batch round before the chat round)."""
    from tasks.selectors.providers.routed import LLMRouter

    return selector.router if isinstance(selector.router, LLMRouter) else None


_noted: set[tuple[str, str]] = set()
_noted_lock = threading.Lock()


def note_calls(selector: "ChatSelector", reason: str) -> None:
    """Say once per process and model why an arm asked to batch sends calls."""
    with _noted_lock:
        if (selector.model_id, reason) in _noted:
            return
        _noted.add((selector.model_id, reason))
    logging.getLogger("tooleval.batch").warning("batch: %s", reason)


def select_batched(selector: "ChatSelector", batch: Sequence[SelectionInput], scope: BatchScope,
                   send: BatchSend) -> list[Selection]:
    """The selections of a unit's inputs, their chat requests sent as provider batches (see the module)."""
    ledger = scope.ledger
    answers: list[Selection | None] = [None] * len(batch)

    def answer(index: int, selection: Selection) -> None:
        answers[index] = selection
        if scope.on_answer is not None:
            scope.on_answer(index, selection)

    def not_sent(detail: str) -> list[Selection]:
        for i, item in enumerate(batch):
            answer(i, Selection(request_id=item.request_id, chosen=None, outcome_hint="error", detail=detail,
                                latency_ms=0.0, http_attempts=0))
        return [a for a in answers if a is not None]

    llm = llm_router(selector)
    for sender in _callers(selector):
        if unsendable := sender.unsendable(ledger):
            return not_sent(unsendable)
    price = price_for(selector.model_id, selector.options, batch=True)
    from tasks.selectors.providers.batch.items import BatchItem, custom_id_for

    router_price = price_for(llm.model_id, llm.caller.options, batch=True) if llm is not None else None
    judge = selector.judge
    staged = scope.chat_stages if judge is not None else {}  # chat calls an earlier run made: only the judge
    reserved: dict[int, Reservation] = {}
    for i, item in enumerate(batch):  # a request's lines (router, chat, votes) are reserved whole before any is sent
        full = selector._request(item, item.tools, None, selector._offered(item.tools))
        reservation = ledger.reserve(*selector.turn_estimate(item, full, (price, router_price)))
        if reservation is None:  # the caps hold at submission: this request is not submitted
            answer(i, Selection(request_id=item.request_id, chosen=None, outcome_hint="error", detail=BUDGET_REACHED,
                                latency_ms=0.0, http_attempts=0))
            continue
        reserved[i] = reservation
    routed = selector.routed_offline(batch)
    spent = {i: _Spent() for i in reserved}
    if llm is not None and set(reserved) - set(staged):
        for i, (result, used) in _router_round(llm, router_price, batch, sorted(set(reserved) - set(staged)), send,
                                               ledger).items():
            routed[i], spent[i] = result, used
            if not result.sent:  # stopping: its chat line is not sent either
                ledger.settle(reserved.pop(i), 0.0, used.calls)
                answer(i, Selection(request_id=batch[i].request_id, chosen=None, outcome_hint="error",
                                    detail=result.detail, latency_ms=result.latency_ms, route=selector.route,
                                    http_attempts=used.attempts, **selector.router_fields(result)))
    waiting: dict[str, tuple[int, _Sent]] = {}
    pending: dict[int, tuple[Selection, _Unsettled]] = {}
    items: list[BatchItem] = []
    for i, reservation in reserved.items():
        if i in staged:
            continue
        item = batch[i]
        offered = selector._offered(item.tools)
        decision, request = selector.decided(item, routed[i], offered)
        custom_id = custom_id_for(send.run, send.arm, send.seed, send.keys[i])
        waiting[custom_id] = (i, _Sent(offered, routed[i], decision, reservation, spent[i]))
        items.append(BatchItem(custom_id=custom_id, request=request,
                               label=f"{send.run}/{send.arm}/{send.seed}/{item.request_id}"))
    if items:
        started = time.perf_counter()
        outcomes = _run(selector.caller, items, send, ledger)
        waited_ms = (time.perf_counter() - started) * 1000
        for custom_id, (i, sent) in waiting.items():
            outcome = outcomes.get(custom_id)
            selection, unsettled = _landed(selector, batch[i], sent, outcome, price, waited_ms, scope, send)
            if unsettled is None:
                answer(i, selection)
            else:  # kept before the judge is asked: a kill now repeats only the judge
                if scope.on_chat_stage is not None:
                    scope.on_chat_stage(i, Unjudged(selection=selection, reply_text=unsettled.reply_text))
                pending[i] = (selection, unsettled)
    for i in staged:
        if i in reserved:
            pending[i] = (staged[i].selection, _Unsettled(reserved[i], 0.0, 0, 0, staged[i].reply_text))
    if pending:
        _judge(selector, batch, pending, send, ledger, answer)
    return [a for a in answers if a is not None]


@dataclass(frozen=True)
class _Unsettled:
    """A judged request's reservation and what its router and chat lines used of it (settled with its votes),
    and the reply text the judge's prompt quotes."""

    reservation: Reservation
    billed: float
    calls: int
    unknown: int
    reply_text: str


def _judge(selector: "ChatSelector", batch: Sequence[SelectionInput], pending: dict, send: BatchSend,
           ledger: RunLedger, answer: Callable[[int, Selection], None]) -> None:
    """The judge's votes on the pending selections as a batch round; each request's reservation settled."""
    from tasks.selectors.providers.batch_judge import judge_round

    judge = selector.judge
    price = price_for(judge.model_id, judge.caller.options, batch=True)
    asked = [(i, batch[i], selection, unsettled.reply_text) for i, (selection, unsettled) in pending.items()]
    judged = judge_round(judge, price, asked, send, ledger, _run, lambda: stop_requested() or send.should_cancel())
    for i, (selection, unsettled) in pending.items():
        votes = judged[i]
        ledger.settle(unsettled.reservation, unsettled.billed + votes.billed, unsettled.calls + votes.calls,
                      unsettled.unknown + votes.unknown)
        if votes.votes is None:  # stopping: an error row (never cached); the kept chat call is judged on resume
            answer(i, Selection(request_id=batch[i].request_id, chosen=None, outcome_hint="error", detail=STOPPED,
                                latency_ms=selection.latency_ms, sent_as="batch", batch_id=selection.batch_id,
                                http_attempts=(selection.http_attempts or 0) + votes.attempts))
        else:
            answer(i, selection.model_copy(update=votes.update(selection)))


@dataclass(frozen=True)
class _Spent:
    """What a request's router line used of its reservation (cost billed, HTTP requests, calls of unknown cost),
    and the HTTP requests its router made in all (a call after a failed line reserves its own)."""

    cost: float = 0.0
    calls: int = 0
    unknown: int = 0
    attempts: int = 0


def _router_round(llm: Any, price: ModelPrice, batch: Sequence[SelectionInput], indexes: list[int],
                  send: BatchSend, ledger: RunLedger) -> dict[int, tuple[Any, _Spent]]:
    """The LLM router's answers, its requests sent as a batch round of their own (custom ids of turn
    ``ROUTER_TURN``) and read as its calls are; a line that failed is sent again as a call."""
    from tasks.selectors.providers.batch.items import BatchItem, custom_id_for
    from tasks.selectors.providers.routed import RouterResult

    ids = {custom_id_for(send.run, send.arm, send.seed, send.keys[i], turn=ROUTER_TURN): i for i in indexes}
    items = [BatchItem(custom_id=cid, request=llm.request(batch[i]),
                       label=f"{send.run}/{send.arm}/{send.seed}/{batch[i].request_id}/router")
             for cid, i in ids.items()]
    started = time.perf_counter()
    outcomes = _run(llm.caller, items, send, ledger)
    waited_ms = (time.perf_counter() - started) * 1000
    results: dict[int, tuple[Any, _Spent]] = {}
    for cid, i in ids.items():
        outcome = outcomes.get(cid)
        if outcome is None or outcome.status != "succeeded" or outcome.reply is None:
            submitted = int(bool(getattr(outcome, "batch_id", None)))
            if stop_requested() or send.should_cancel():
                results[i] = (RouterResult(None, latency_ms=waited_ms, detail=STOPPED, sent=False),
                              _Spent(0.0, submitted, attempts=submitted))
                continue
            again = llm.route(batch[i], ledger)  # a call of its own, reserved and settled by itself
            results[i] = (replace(again, retries=again.retries + submitted, latency_ms=again.latency_ms + waited_ms),
                          _Spent(0.0, submitted, attempts=submitted + int(again.sent) + again.retries))
            continue
        reply = outcome.reply
        cost, mismatch = llm.caller.checked(reply, ledger, price)
        result = llm.read(batch[i], CallResult(reply, mismatch, 0, waited_ms, cost), waited_ms)
        results[i] = (replace(result, cost_usd=cost), _Spent(cost or 0.0, 1, int(cost is None), 1))
    return results


def _run(caller: Any, items: list, send: BatchSend, ledger: RunLedger) -> dict:
    """The items' outcomes from the provider batches of ``caller``'s endpoint (a ``ProviderCaller``)."""
    from tasks.selectors.providers.batch.journal import BatchJournal
    from tasks.selectors.providers.batch.run_batches import run_batches

    path = send.journal_path or Path(tempfile.mkdtemp(prefix="tooleval-batch-")) / JOURNAL_FILE
    journal = BatchJournal(path)
    waiter = _Waiter(send, lambda: ledger.halted(caller.halt_key))
    with _waiters_lock:
        _waiters.add(waiter)
    try:
        outcomes = run_batches(caller.kind, items, journal=journal, base_url=caller.endpoint,
                               api_key=caller._key or "", options=caller.options,
                               poll=poll_policy(caller.options, waiter.sleep), should_cancel=waiter.should_cancel,
                               block=not send.detach)
        waiting = [item.custom_id for item in items if item.custom_id not in outcomes]
        if waiting:  # detached: these requests' batches have not ended
            raise BatchesPending(_pending_batches(journal, caller, waiting))
        return outcomes
    finally:
        waiter.cancel_sent.set()
        with _waiters_lock:
            _waiters.discard(waiter)
        close = getattr(journal, "close", None)
        if close is not None:
            close()


def _pending_batches(journal: Any, caller: Any, custom_ids: Sequence[str]) -> list[str]:
    """The ids of the journaled batches that hold ``custom_ids`` (a chunk key for one not yet created)."""
    from tasks.selectors.providers.batch.run_batches import WIRES

    endpoint = f"{caller.kind} {caller.endpoint or WIRES[caller.kind].default_base_url}"
    chunks = [journal.chunk(key) for key in journal.chunk_keys(endpoint, custom_ids)]
    return [chunk.batch_id or chunk.chunk_key for chunk in chunks if chunk is not None] or list(custom_ids[:1])


def poll_policy(options: Any, sleep: Callable[[float], None]) -> Any:
    """The arm's poll policy: ``batch_poll_s`` the first wait (default the transport's), sleeping with ``sleep``."""
    from tasks.selectors.providers.batch.run_batches import PollPolicy

    first = options.get("batch_poll_s")
    if first is None:
        return PollPolicy(sleep=sleep)
    return PollPolicy(first_s=float(first), max_s=max(float(first), 300.0), sleep=sleep)


@dataclass(frozen=True)
class _Sent:
    """How one chat line was built: its offered tools, its router's result and the routing decision, and the
    request's reservation with what its router lines used of it."""

    offered: Any
    routed: Any
    decision: Any
    reservation: Reservation
    spent: _Spent


def _landed(selector: "ChatSelector", item: SelectionInput, sent: _Sent, outcome: Any, price: ModelPrice,
            waited_ms: float, scope: BatchScope, send: BatchSend) -> tuple[Selection, _Unsettled | None]:
    """One request's Selection from its chat line's outcome: read as a call's reply (with its router's answer,
    as ``ChatSelector._turn`` reads them), or sent again as a call routed as before."""
    from tasks.selectors.providers.chat_selector import read_reply

    caller, ledger, spent, routed = selector.caller, scope.ledger, sent.spent, sent.routed
    batch_id = getattr(outcome, "batch_id", None) or None
    if outcome is None or outcome.status != "succeeded" or outcome.reply is None:
        submitted = int(batch_id is not None)  # a request that went in a batch counts as a call, unbilled
        ledger.settle(sent.reservation, spent.cost, submitted + spent.calls, spent.unknown)
        if stop_requested() or send.should_cancel():  # the run is stopping: no call after the batch
            return Selection(request_id=item.request_id, chosen=None, outcome_hint="error", detail=STOPPED,
                             latency_ms=waited_ms, batch_id=batch_id, sent_as="batch",
                             http_attempts=submitted + spent.attempts), None
        again = selector._safe_one(item, ledger, routed)  # reserves its own call, routed as before
        return again.model_copy(update={"sent_as": "call_after_batch", "batch_id": batch_id,
                                        "retries": again.retries + submitted,
                                        "http_attempts": (again.http_attempts or 0) + submitted + spent.attempts}), None
    reply = outcome.reply
    cost, mismatch = caller.checked(reply, ledger, price)
    unknown = int(cost is None) + spent.unknown
    result = CallResult(reply, mismatch, 0, waited_ms, cost)
    evidence = served_evidence(selector.model_id, reply.served_model, is_custom_server(caller.endpoint))
    decision = sent.decision
    fields = read_reply(result, decision.tools, sent.offered.names, sent.offered.by_name, evidence)
    fields["chat_n_tools"] = len(decision.tools)
    selector.add_route_fields(fields, routed, decision)
    router_latency, router_cost = (routed.latency_ms, routed.cost_usd or 0.0) if routed is not None else (0.0, 0.0)
    if routed is not None:
        fields["retries"] = fields.get("retries", 0) + routed.retries
    selection = Selection(request_id=item.request_id, latency_ms=waited_ms + router_latency,
                          cost_usd=None if unknown else (cost or 0.0) + router_cost, price_version=price.version,
                          sent_as="batch", batch_id=batch_id, http_attempts=1 + spent.attempts,
                          **selector.router_fields(routed), **fields)
    if selector.judge is not None and selection.chosen is not None and selection.outcome_hint != "error":
        return selection, _Unsettled(sent.reservation, (cost or 0.0) + spent.cost, 1 + spent.calls, unknown,
                                     reply.text or "")
    ledger.settle(sent.reservation, (cost or 0.0) + spent.cost, 1 + spent.calls, unknown)
    return selection, None
