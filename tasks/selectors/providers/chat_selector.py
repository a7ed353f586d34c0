"""The hosted-model selector (kinds 'openai' and 'anthropic'): one chat call per request, run concurrently.

Per batch the offline decision model, if any, routes the whole batch at once; then each request runs as one
task on the endpoint's threads (``concurrency`` of them per process, shared by every batch the process runs):
the LLM router's call, the routing decision, the chat call (tools in the seed's order, names mapped to what
the provider accepts), reading the first tool call, the judge's votes.

Reading a reply (the outcome taxonomy; nothing invalid or empty is ever a correct 'none'):

- a tool call of an offered tool with arguments valid under its JSON schema: that tool;
- a tool call naming no offered tool, with no name at all, with arguments that are not a JSON object or break
  the schema, or (Anthropic) an ``input`` that is not an object: *invalid* (the tool, when known, is kept in
  ``chosen`` and the reason in ``detail``);
- no tool call and text holding tool-call markup (``functions.NAME:``, ``<tool_call>{...}</tool_call>``, ...:
  ``text_tool_calls``): *invalid*, detail ``tool call written as text (...)``;
- no tool call and some other text: 'none';
- no tool call and no text, or a reply cut short (length / max_tokens / content filter / refusal): *empty*;
- no reply after the retries, an HTTP 200 whose body is an error or not JSON (``reply_body``), or a served
  model that is not the pinned one: *error* (never cached);
- not sent because the run's budget was reached: *error* with the detail ``budget reached``.

Each answer is handed to the batch scope as it completes (``call_budget.BatchScope``), so the caller can
cache it at once; a judged arm's chat call is handed over before the judge is asked, so a resumed run asks
only the judge. A scope may ask for a provider batch instead of calls (``batch_selection.py``).
"""

from __future__ import annotations

import time
from concurrent.futures import as_completed
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from schemas.catalogue import NONE_LABEL, ToolSpec
from schemas.selection.rows import Selection
from tasks.selectors.base import SelectionInput
from tasks.selectors.providers.call_budget import BUDGET_REACHED, BatchScope, RunLedger, Turn, current_scope
from tasks.selectors.providers.batch_selection import note_calls, select_batched, why_calls
from tasks.selectors.providers.chat_options import DEFAULT_CONCURRENCY, is_custom_server, provider_defaults
from tasks.selectors.providers.chat_types import ChatReply, ChatRequest, WireTool
from tasks.drill_points import reached
from tasks.selectors.providers.judge import Judge, Unjudged, arguments_text
from tasks.selectors.providers.pinned_models import served_evidence
from tasks.selectors.providers.pricing import ModelPrice
from tasks.selectors.providers.provider_calls import CallResult, ProviderCaller
from tasks.selectors.providers.routed import Decision, LLMRouter, OfflineRouter, RouterResult, build_router, decide
from tasks.selectors.providers.text_tool_calls import TEXT_CALL_DETAIL, find_text_call, text_call_detail
from tasks.selectors.providers.tool_call_check import check_arguments
from tasks.selectors.providers.tool_names import ToolNameMap
from tasks.selectors.providers.wire_tools import wire_tool, wire_tool_choice

OFFERED_SET_CACHE = 2_000


@dataclass(frozen=True)
class OfferedTools:
    """One offered tool set, prepared for the wire."""

    tools: tuple[ToolSpec, ...]
    names: ToolNameMap
    wire: dict[str, WireTool]
    all_wire: tuple[WireTool, ...]
    by_name: dict[str, ToolSpec]


def read_reply(result: CallResult, sent_tools: tuple[ToolSpec, ...], names: ToolNameMap,
               all_tools: dict[str, ToolSpec], evidence: str | None = None) -> dict[str, Any]:
    """Selection fields from one chat call (see the module docstring for the taxonomy)."""
    reply = result.reply
    fields: dict[str, Any] = {"retries": result.retries}
    if reply is not None:
        fields.update(served_model_id=reply.served_model, input_tokens=reply.input_tokens,
                      output_tokens=reply.output_tokens, stop_reason=reply.stop_reason,
                      n_tool_calls=reply.n_tool_calls, cached_input_tokens=reply.cached_input_tokens,
                      cache_write_tokens=_cache_writes(reply), served_model_evidence=evidence)
    if result.detail is not None:
        return {**fields, "chosen": None, "outcome_hint": "error", "detail": result.detail}
    assert reply is not None
    if reply.unfinished:
        reason = "refused by the provider" if reply.stop_reason == "refusal" else "unfinished reply"
        return {**fields, "chosen": None, "outcome_hint": "empty",
                "detail": f"{reason} (stop reason {reply.stop_reason})"}
    if reply.call_problem is not None:
        chosen = names.original(reply.tool_name) or reply.tool_name if reply.tool_name else None
        return {**fields, "chosen": chosen, "outcome_hint": "invalid", "arguments": arguments_text(reply.arguments),
                "detail": reply.call_problem}
    if reply.tool_name is None:
        if reply.refusal:
            return {**fields, "chosen": None, "outcome_hint": "empty", "detail": "refused by the provider"}
        if not reply.text.strip():
            return {**fields, "chosen": None, "outcome_hint": "empty", "detail": "empty reply: no tool call, no text"}
        found = find_text_call(reply.text)
        if found is not None:  # markup as text: the model tried a call the server did not return as one
            named = names.original(found.name) or found.name if found.name else None
            return {**fields, "chosen": named, "outcome_hint": "invalid", "detail": text_call_detail(found)}
        return {**fields, "chosen": NONE_LABEL, "outcome_hint": "ok"}
    original = names.original(reply.tool_name)
    sent = {tool.name for tool in sent_tools}
    if original is None or original not in sent:
        where = "was not offered in this call" if original is not None else "is not an offered tool"
        return {**fields, "chosen": original or reply.tool_name, "outcome_hint": "invalid",
                "arguments": arguments_text(reply.arguments), "detail": f"tool '{reply.tool_name}' {where}"}
    check = check_arguments(all_tools[original], reply.arguments)
    if not check.ok:
        return {**fields, "chosen": original, "outcome_hint": "invalid", "arguments": check.arguments_json,
                "detail": check.detail}
    return {**fields, "chosen": original, "outcome_hint": "ok", "arguments": check.arguments_json}


def _cache_writes(reply: ChatReply) -> int | None:
    if reply.cache_write_tokens is None and reply.cache_write_1h_tokens is None:
        return None
    return (reply.cache_write_tokens or 0) + (reply.cache_write_1h_tokens or 0)


class ChatSelector:
    """A chat model choosing among tools, optionally routed and judged (see ``routed.py``, ``judge.py``)."""

    def __init__(self, kind: str, model_id: str, options: Mapping[str, Any] | None = None):
        self.kind, self.model_id = kind, model_id
        self.options = provider_defaults(kind, options or {})
        self.caller = ProviderCaller(kind, model_id, self.options)
        self.concurrency = int(self.options.get("concurrency", DEFAULT_CONCURRENCY))
        self.max_tokens = int(self.options["max_tokens"])
        self.route: str | None = self.options.get("route")
        self.threshold = self.options.get("threshold")
        self.narrow_k = int(self.options.get("narrow_k", 1))
        self.tool_choice: str | None = self.options.get("tool_choice")
        """The arm's tool_choice (auto / required / none), sent whenever the route forces nothing."""
        # the LLM router and the judge call within the chat model's turns: by default they get its bound too
        routing = dict(self.options)
        if routing.get("router") == "llm":
            routing["router_options"] = {"concurrency": self.concurrency, **(routing.get("router_options") or {})}
        self.router = build_router(routing)
        judge = self.options.get("judge")
        self.judge = Judge({"concurrency": self.concurrency, **judge}) if judge else None
        self._offered_sets: dict[int, OfferedTools] = {}

    # -- one request ------------------------------------------------------------------------------------

    def _offered(self, tools: tuple[ToolSpec, ...]) -> "OfferedTools":
        """The name map and wire form of one offered tool set, built once: every request of a seed shares the
        tools tuple of its permuted catalogue."""
        cached = self._offered_sets.get(id(tools))
        if cached is None or cached.tools is not tools:
            if len(self._offered_sets) > OFFERED_SET_CACHE:  # per-request tool sets (BFCL) would grow it forever
                self._offered_sets.clear()
            names = ToolNameMap.for_names(t.name for t in tools)
            wire = {t.name: wire_tool(t, names.wire(t.name)) for t in tools}
            cached = OfferedTools(tools, names, wire, tuple(wire[t.name] for t in tools), {t.name: t for t in tools})
            self._offered_sets[id(tools)] = cached
        return cached

    def _request(self, item: SelectionInput, tools: tuple[ToolSpec, ...], tool_choice: str | None,
                 offered: "OfferedTools") -> ChatRequest:
        wire_tools = offered.all_wire if tools is item.tools else tuple(offered.wire[t.name] for t in tools)
        choice = wire_tool_choice(self.tool_choice if tool_choice is None else tool_choice, offered.names,
                                  bool(wire_tools))
        return ChatRequest(model=self.model_id, system=item.prompt,
                           messages=tuple((m.role, m.content) for m in item.messages),
                           tools=wire_tools, tool_choice=choice, max_tokens=self.max_tokens)

    def turn_estimate(self, item: SelectionInput, full_request: ChatRequest,
                      batch_prices: tuple[ModelPrice, ModelPrice | None] | None = None) -> tuple[float, int]:
        """An upper bound on one turn's cost, and its calls: the LLM router's, the chat model's over every
        tool (narrowing only shortens it), and the judge's votes (at the judge's call price). ``batch_prices``:
        the chat model's and the LLM router's, for a turn sent as batch lines."""
        chat_price, router_price = batch_prices or (None, None)
        estimate, calls = self.caller.estimate_usd(full_request, chat_price), 1
        if isinstance(self.router, LLMRouter):
            estimate += self.router.caller.estimate_usd(self.router.request(item), router_price)
            calls += 1
        if self.judge is not None:
            estimate += self.judge.estimate_usd(item)
            calls += self.judge.votes
        return estimate, calls

    def decided(self, item: SelectionInput, routed: RouterResult | None, offered: "OfferedTools",
                full_request: ChatRequest | None = None) -> tuple[Decision, ChatRequest]:
        """The routing decision for one request and the chat request it sends (the same for a call and a
        batch line)."""
        decision = decide(self.route or "default", routed, item.tools, self.threshold, self.narrow_k)
        if decision.tools is item.tools and decision.tool_choice is None:
            return decision, full_request or self._request(item, item.tools, None, offered)
        return decision, self._request(item, decision.tools, decision.tool_choice, offered)

    def router_fields(self, routed: RouterResult | None) -> dict[str, Any]:
        """A routed row's router columns (none when the arm has no router or it gave no result)."""
        if self.router is None or routed is None:
            return {}
        return {"router": self.router.label, "router_pick": routed.pick, "router_confidence": routed.confidence,
                "router_probabilities": routed.probabilities, "router_latency_ms": routed.latency_ms,
                "router_cost_usd": routed.cost_usd, "nearest_example_cos": routed.nearest_example_cos}

    def add_route_fields(self, fields: dict[str, Any], routed: RouterResult | None, decision: Decision) -> None:
        """A routed arm's route columns, and the router's failure as the detail of a fallback."""
        if self.route is not None:
            fields.update(route=self.route, decided_by=decision.decided_by, fallback=decision.fallback)
            if routed is not None and routed.detail and decision.fallback:
                fields["detail"] = fields.get("detail") or routed.detail

    def routed_offline(self, batch: Sequence[SelectionInput]) -> list[RouterResult | None]:
        """The offline router's result per input, run over the whole batch at once (None without one)."""
        if isinstance(self.router, OfflineRouter):
            return list(self.router.route_batch(batch))
        return [None] * len(batch)

    def select_one(self, item: SelectionInput, ledger: RunLedger, routed: RouterResult | None = None,
                   stage: Unjudged | None = None, on_stage: Callable[[Unjudged], None] | None = None) -> Selection:
        """One request's selection. ``stage``: its chat call done by an earlier run, only the judge is asked;
        ``on_stage``: told the chat call's answer before the judge is asked (the caller caches it)."""
        started = time.perf_counter()
        offered = self._offered(item.tools)
        full_request = self._request(item, item.tools, None, offered)
        estimate, calls = self.turn_estimate(item, full_request)
        reservation = ledger.reserve(estimate, calls)
        if reservation is None:
            return Selection(request_id=item.request_id, chosen=None, outcome_hint="error", detail=BUDGET_REACHED,
                             latency_ms=0.0, route=self.route, http_attempts=0)
        turn = Turn()
        try:
            if stage is not None and self.judge is not None:
                selection = self._judged(item, stage.selection, stage.reply_text, ledger, turn)
            else:
                selection = self._turn(item, ledger, routed, offered, full_request, turn, started, on_stage)
        finally:
            ledger.settle(reservation, turn.cost_usd, turn.calls, turn.unknown_cost_calls)
        return selection.model_copy(update={"http_attempts": turn.http_requests})

    def _turn(self, item: SelectionInput, ledger: RunLedger, routed: RouterResult | None, offered: "OfferedTools",
              full_request: ChatRequest, turn: Turn, started: float,
              on_stage: Callable[[Unjudged], None] | None = None) -> Selection:
        router_fields: dict[str, Any] = {}
        router_cost, router_latency, router_retries = 0.0, 0.0, 0
        if isinstance(self.router, LLMRouter) and routed is None:  # given: its batch line answered it
            routed = self.router.route(item, ledger, turn)
        if self.router is not None and routed is not None:
            router_cost, router_latency, router_retries = routed.cost_usd or 0.0, routed.latency_ms, routed.retries
            router_fields = self.router_fields(routed)
        if routed is not None and not routed.sent:  # the router's call was not made: neither is the chat call
            return Selection(request_id=item.request_id, chosen=None, outcome_hint="error", detail=routed.detail,
                             latency_ms=(time.perf_counter() - started) * 1000, retries=routed.retries,
                             route=self.route, **router_fields)
        decision, request = self.decided(item, routed, offered, full_request)
        result = self.caller.call(request, ledger, turn)
        evidence = None if result.reply is None else served_evidence(
            self.model_id, result.reply.served_model, is_custom_server(self.caller.endpoint))
        fields = read_reply(result, decision.tools, offered.names, offered.by_name, evidence)
        fields["retries"] = fields.get("retries", 0) + router_retries
        fields["chat_n_tools"] = len(decision.tools)
        chat_cost = result.cost_usd
        total_cost = None if chat_cost is None and not router_cost else (chat_cost or 0.0) + router_cost
        if turn.unknown_cost_calls:  # the router's or the chat model's reply gave no token counts: unknown
            total_cost = None
        self.add_route_fields(fields, routed, decision)
        selection = Selection(
            request_id=item.request_id, latency_ms=result.latency_ms + router_latency, cost_usd=total_cost,
            price_version=self.caller.price.version, sent_as="call", **router_fields, **fields,
        )
        if self.judge is not None and selection.chosen is not None and selection.outcome_hint != "error":
            reply_text = result.reply.text if result.reply else ""
            if on_stage is not None:  # the chat call is kept before the judge is asked: a kill now repeats only the judge
                on_stage(Unjudged(selection=selection, reply_text=reply_text))
            selection = self._judged(item, selection, reply_text, ledger, turn)
        return selection

    def _judged(self, item: SelectionInput, selection: Selection, reply_text: str, ledger: RunLedger,
                turn: Turn) -> Selection:
        """The selection with the judge's verdict (the judge is asked only about a selection with a choice)."""
        if self.judge is None or selection.chosen is None or selection.outcome_hint == "error":
            return selection
        reached("judge-calling", item.request_id)
        as_text = (selection.detail or "").startswith(TEXT_CALL_DETAIL)
        verdict = self.judge.judge(item, selection.chosen, selection.arguments, reply_text, ledger, turn, as_text)
        return selection.model_copy(update={"judge_verdict": verdict.verdict, "judge_votes": list(verdict.votes),
                                            "judge_cost_usd": verdict.cost_usd})

    # -- a batch -------------------------------------------------------------------------------------------

    def select(self, batch: Sequence[SelectionInput]) -> list[Selection]:
        batch = list(batch)
        if not batch:
            return []
        scope = current_scope()
        own_ledger = None
        if scope is None:
            own_ledger = RunLedger(None, "unscoped")
            scope = BatchScope(own_ledger)
        try:
            send = scope.batch
            if send is not None and (reason := why_calls(self)) is not None:
                note_calls(self, reason)  # a model with no batch price keeps its calls (batch_selection.py)
                send = None
            return self._called(batch, scope) if send is None else select_batched(self, batch, scope, send)
        finally:
            if own_ledger is not None:
                own_ledger.close()

    def _called(self, batch: list[SelectionInput], scope: BatchScope) -> list[Selection]:
        """The batch's selections, one call per request on the endpoint's threads."""
        routed = self.routed_offline(batch)
        answers: list[Selection | None] = [None] * len(batch)
        pool = self.caller.gate.workers  # the endpoint's threads, shared with the process's other batches
        futures = {pool.submit(self._answered, i, item, scope, routed[i]): i for i, item in enumerate(batch)}
        try:
            for future in as_completed(futures):
                answers[futures[future]] = future.result()  # a failure to keep an answer raises here
        finally:
            for future in futures:
                future.cancel()  # an interrupted batch leaves nothing queued behind it
        return [a for a in answers if a is not None]

    def _answered(self, index: int, item: SelectionInput, scope: BatchScope, routed: RouterResult | None) -> Selection:
        """One input's answer, handed to the scope's ``on_answer`` by the endpoint's thread that received it:
        kept the moment it arrives, however far the batch's own thread lags (a kill then repeats only the
        calls in flight, at most the endpoint's concurrency)."""
        keep = scope.on_chat_stage
        on_stage = None if keep is None else (lambda stage: keep(index, stage))
        answer = self._safe_one(item, scope.ledger, routed, scope.chat_stages.get(index), on_stage)
        if scope.on_answer is not None:
            scope.on_answer(index, answer)
        return answer

    def _safe_one(self, item: SelectionInput, ledger: RunLedger, routed: RouterResult | None,
                  stage: Unjudged | None = None, on_stage: Callable[[Unjudged], None] | None = None) -> Selection:
        started = time.perf_counter()
        try:
            return self.select_one(item, ledger, routed, stage, on_stage)
        except Exception as error:  # a bug in reading one reply must not sink the batch: it lands as a row
            return Selection(request_id=item.request_id, chosen=None, outcome_hint="error",
                             detail=f"selector failed: {type(error).__name__}",
                             latency_ms=(time.perf_counter() - started) * 1000)
