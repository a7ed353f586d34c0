"""Arms routed by an offline router sent as provider batches: the router runs locally over the unit, then
each chat request a synchronous run would send (the forced tool, the narrowed tools, the gated fallback) goes
in the batch, built the same way; the rows are a synchronous run's at half the chat cost (tests/batch_server.py,
with the official SDKs)."""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from schemas.catalogue import Catalogue
from schemas.taskset import LabelledRequest, Message
from tasks.core_records import RunContext
from tasks.selection.arms import SelectionArm
from tasks.selection.plan_batch import plan_arm_seed
from tasks.selection.select_batch import select_and_land
from tasks.selectors.providers.call_budget import BUDGET_REACHED, spent_in_run
from tasks.selectors.providers.routed import OfflineRouter
from tests.batch_server import BatchServer
from tests.provider_server import Reply, Seen, status_reply
from tests.factories import SUPPORT
from tests.factories.catalogues import support_tools
from tests.selectors.providers.conftest import FAKE_KEY, MODELS, chat_options
from tests.selectors.providers.test_batch_selection import COMPARED, by_key, mixed

ASKS = ("where is order", "I want a refund for order", "please cancel order", "track the parcel of order",
        "change the delivery address of order", "hello, about order")
ROUTED = ("route", "decided_by", "fallback", "router", "router_pick", "router_confidence", "chat_n_tools")


def requests() -> tuple[LabelledRequest, ...]:
    """Requests the lexical router tells apart; each carries the order number the ``mixed`` script reads."""
    return tuple(LabelledRequest(id=f"r{i}", messages=(Message(role="user", content=f"{ask} NW-12{i:05d}?"),),
                                 expected="lookup_order", slice="existing") for i, ask in enumerate(ASKS))


def run_routed(kind: str, server: BatchServer, tmp: Path, name: str, batch: bool, max_calls: int | None = None,
               **options: Any) -> list[dict]:
    if options.get("router") == "llm":
        options.update(router_model=MODELS["openai"], router_options={"base_url": server.openai_url})
    options = chat_options(server, kind, batch_poll_s=0.02, **options)
    tools = support_tools()
    arm = SelectionArm(name=kind, rung=1, catalogue_name="support", catalogue=Catalogue(name="support", tools=tools),
                       prompt_name="default", prompt_text=(SUPPORT / "prompts" / "default.md").read_text(),
                       model_id=MODELS[kind], selector=kind, version="v1", options=options)
    ctx = RunContext(name, "exp", tmp / name / "rows", None, tmp / "ledger.sqlite", max_calls=max_calls, batch=batch)
    for seed in (1, 2):
        for unit in plan_arm_seed(arm, seed, requests(), "support", len(ASKS)):
            select_and_land(unit, ctx)
    return [row for path in sorted((tmp / name / "rows").rglob("*.parquet")) for row in pq.read_table(path).to_pylist()]


def routed_mixed(seen: Seen) -> Reply:
    """``mixed``, and an LLM router's answer that differs by request: one of the first four options."""
    if seen.is_router:
        number = int(seen.user_text.split("NW-12")[1][:5])
        return Reply(logprobs=((str(1 + number % 4), 0.7), (str(2 + number % 4), 0.3)))
    return mixed(seen)


def sent(server: BatchServer) -> Counter:
    """Each chat request the server answered, as what decides its reply: the request, tools and choice."""
    return Counter((s.api, s.user_text, s.tools, s.tool_choice) for s in server.requests())


def median_confidence() -> float:
    """A gated threshold that the lexical router's confidences on these requests fall on both sides of."""
    from tasks.selectors.base import SelectionInput

    tools = support_tools()
    router = OfflineRouter("lexical", None, {})
    inputs = [SelectionInput(request_id=r.id, messages=r.messages, tools=tools, prompt="") for r in requests()]
    return statistics.median(result.confidence for result in router.route_batch(inputs))


@pytest.mark.parametrize("kind,route", [("openai", {"route": "forced"}), ("openai", {"route": "gated"}),
                                        ("anthropic", {"route": "narrowed", "narrow_k": 2}),
                                        ("anthropic", {"route": "forced", "router": "llm"})])
def test_a_routed_arm_batched_gives_the_rows_of_its_calls_at_half_the_cost(kind, route, tmp_path):
    """An offline router runs locally; an LLM router's requests go as a batch round before the chat round."""
    options = {"router": "lexical", **route}
    if route["route"] == "gated":
        options["threshold"] = median_confidence()
    rounds = 2 if options["router"] == "llm" else 1
    with BatchServer(routed_mixed, api_key=FAKE_KEY, polls_to_end=2) as server:
        calls = run_routed(kind, server, tmp_path, "sync", batch=False, **options)
        assert not server.batches
        sync_sent = sent(server)
        batched = run_routed(kind, server, tmp_path, "batch", batch=True, **options)
        assert len(server.batches) == 2 * rounds  # per unit: the router's round, then the chat round
        assert sorted(server.submissions.values()) == [1] * (2 * len(ASKS) * rounds)
        batch_sent = sent(server) - sync_sent
    assert batch_sent == sync_sent  # every line built as its call: the same tools and tool_choice
    calls, batched = by_key(calls), by_key(batched)
    assert calls.keys() == batched.keys() and len(calls) == 2 * len(ASKS)
    for key, call in calls.items():
        row = batched[key]
        assert {c: row[c] for c in COMPARED + ROUTED} == {c: call[c] for c in COMPARED + ROUTED}, key
        assert row["http_attempts"] == call["http_attempts"] == rounds and row["retries"] == call["retries"] == 0
        if rounds == 2:  # an LLM router's line is billed at its batch price too
            assert call["router_cost_usd"] > 0 and row["router_cost_usd"] == pytest.approx(call["router_cost_usd"] / 2)
        assert row["sent_as"] == "batch" and row["batch_id"] in server.batches and call["sent_as"] == "call"
        assert call["cost_usd"] > 0 and row["cost_usd"] == pytest.approx(call["cost_usd"] / 2, rel=1e-9)
    deciders = Counter(row["decided_by"] for row in calls.values())
    forced = sum(n for line, n in batch_sent.items() if line[3] is not None and line[2])  # a chat line
    if route["route"] == "gated":  # forced above the threshold, the chat model's own choice below it
        assert deciders["router"] and deciders["chat"] and forced == deciders["router"]
    elif route["route"] == "forced":
        assert set(deciders) == {"router"} and forced == 2 * len(ASKS)
    else:  # the chat model chooses among the router's top two
        assert set(deciders) == {"chat"} and not forced and all(len(line[2]) <= 2 for line in batch_sent)


def test_a_routed_batch_line_that_failed_is_sent_again_as_a_routed_call(tmp_path):
    def script(seen):
        from tests.provider_server import status_reply, tool_call

        if "NW-1200001" in seen.user_text and seen.attempt == 0:
            return status_reply(500)
        return tool_call("lookup_order", {"order_id": "NW-1234567"})

    with BatchServer(script, api_key=FAKE_KEY, polls_to_end=1) as server:
        rows = run_routed("openai", server, tmp_path, "run", batch=True, route="forced", router="lexical")
        again = [s for s in server.requests() if s.attempt]
    retried = [row for row in rows if row["sent_as"] == "call_after_batch"]
    assert len(retried) == 2 and all(row["route"] == "forced" and row["router"] for row in retried)
    assert len(again) == 2 and all(s.tool_choice is not None for s in again)  # forced again, as the line was


def test_an_llm_routers_failed_line_is_sent_again_as_a_call_and_the_caps_hold_for_both_rounds(tmp_path):
    def script(seen: Seen) -> Reply:
        if seen.is_router and "NW-1200001" in seen.user_text and seen.attempt == 0:
            return status_reply(500)  # its router line errors; the router's call after it answers
        return routed_mixed(seen)

    with BatchServer(script, api_key=FAKE_KEY, polls_to_end=1) as server:
        rows = run_routed("openai", server, tmp_path, "run", batch=True, route="forced", router="llm",
                          max_calls=2 * 2 * len(ASKS) - 2)  # r1's router call after its line takes one more
        # seed 1 takes 13 calls; seed 2 reserves four requests' two lines, refuses two and leaves r1's call one
        router_calls = [s for s in server.requests(router=True) if s.attempt]
        submitted = sum(server.submissions.values())
    refused = [row for row in rows if row["detail"] == BUDGET_REACHED]
    assert len(refused) == 2 and all(row["http_attempts"] == 0 for row in refused)
    assert submitted == 2 * (2 * len(ASKS) - 2)  # no line of a refused request left
    again = [row for row in rows if row["request_id"] == "r1" and not row["error"]]
    assert len(router_calls) == len(again) == 2 and all(row["retries"] == 1 and row["http_attempts"] == 3 and
                                                    row["sent_as"] == "batch" and row["decided_by"] == "router"
                                                    for row in again)
    spent = spent_in_run(tmp_path / "ledger.sqlite", "run")
    assert spent.calls == sum(row["http_attempts"] for row in rows)
    assert spent.spend_usd == pytest.approx(sum(row["cost_usd"] or 0 for row in rows))
