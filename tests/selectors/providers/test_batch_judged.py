"""A judged arm sent as provider batches: the chat round, then the judge's votes as a round of their own on the
replies with a choice; the rows are a synchronous run's (verdicts, votes, HTTP requests) at half the cost,
the chat call kept before the votes are asked (tests/batch_server.py, with the official SDKs)."""

from __future__ import annotations

from collections import Counter

import pytest

from tasks.selectors.providers.call_budget import spent_in_run
from tasks.selectors.providers.judge import JUDGE_SYSTEM
from tests.batch_server import BatchServer
from tests.provider_server import Reply, Seen, status_reply, text_reply
from tests.selectors.providers.conftest import FAKE_KEY, MODELS
from tests.selectors.providers.test_batch_routed import ASKS, run_routed
from tests.selectors.providers.test_batch_selection import COMPARED, by_key, mixed

JUDGED = ("judge_verdict", "judge_votes", "http_attempts", "retries")


def judged_mixed(seen: Seen) -> Reply:
    """``mixed``, and a judge whose vote differs by request and by vote."""
    if seen.system == JUDGE_SYSTEM:
        number = int(seen.user_text.split("NW-12")[1][:5])
        right = bool(number % 2) != (seen.seed == 3)  # the third vote dissents
        return text_reply("right" if right else "Wrong.")
    return mixed(seen)


def judge_options(server: BatchServer) -> dict:
    return {"judge": {"model": MODELS["openai"], "selector": "openai", "base_url": server.openai_url, "votes": 3,
                      "provider_seed": 1}}


def test_a_judged_arm_batched_gives_the_rows_of_its_calls_at_half_the_cost(tmp_path):
    with BatchServer(judged_mixed, api_key=FAKE_KEY, polls_to_end=2) as server:
        calls = run_routed("anthropic", server, tmp_path, "sync", batch=False, **judge_options(server))
        assert not server.batches
        sync_sent = Counter((s.api, s.system, s.user_text, s.tools, s.seed) for s in server.requests())
        batched = run_routed("anthropic", server, tmp_path, "batch", batch=True, **judge_options(server))
        assert len(server.batches) == 4  # per unit: the chat round, then the judge's
        batch_sent = Counter((s.api, s.system, s.user_text, s.tools, s.seed) for s in server.requests()) - sync_sent
    assert batch_sent == sync_sent  # the same chat requests and the same votes (prompt and seed)
    calls, batched = by_key(calls), by_key(batched)
    assert calls.keys() == batched.keys()
    verdicts = Counter(row["judge_verdict"] for row in calls.values())
    assert verdicts["right"] and verdicts["wrong"] and verdicts[None]  # an empty reply is not judged
    for key, call in calls.items():
        row = batched[key]
        assert {c: row[c] for c in COMPARED + JUDGED} == {c: call[c] for c in COMPARED + JUDGED}, key
        assert row["sent_as"] == "batch" and row["cost_usd"] == pytest.approx(call["cost_usd"] / 2)
        if call["judge_verdict"] is not None:
            assert call["judge_cost_usd"] > 0 and row["judge_cost_usd"] == pytest.approx(call["judge_cost_usd"] / 2)


def test_a_failed_vote_line_is_sent_again_as_a_call(tmp_path):
    def script(seen: Seen) -> Reply:
        if seen.system == JUDGE_SYSTEM and "NW-1200000" in seen.user_text and seen.seed == 1 and not seen.attempt:
            return status_reply(500)
        return judged_mixed(seen)

    with BatchServer(script, api_key=FAKE_KEY, polls_to_end=1) as server:
        rows = run_routed("anthropic", server, tmp_path, "run", batch=True, **judge_options(server))
        failed = [s for s in server.requests() if s.system == JUDGE_SYSTEM and "NW-1200000" in s.user_text and
                  s.seed == 1]
    [first] = [row for row in rows if row["request_id"] == "r0" and row["seed"] == 1]
    assert failed[0].attempt == 0 and failed[1].attempt  # the line that failed, then the call after it
    assert first["judge_verdict"] == "wrong" and first["judge_votes"] == ["wrong", "wrong", "right"]
    assert first["http_attempts"] == 1 + 3 + 1 and len(rows) == 2 * len(ASKS)
    spent = spent_in_run(tmp_path / "ledger.sqlite", "run")  # every request that left counted once
    assert spent.calls == sum(row["http_attempts"] for row in rows)
    assert spent.spend_usd == pytest.approx(sum(row["cost_usd"] + (row["judge_cost_usd"] or 0) for row in rows))


def test_a_kept_chat_call_is_only_judged_and_a_fresh_one_is_kept_before_its_votes():
    from schemas.selection.rows import Selection
    from schemas.taskset import Message
    from tasks.selectors.base import SelectionInput
    from tasks.selectors.providers.batch_selection import BatchSend
    from tasks.selectors.providers.call_budget import BatchScope, RunLedger, batch_scope
    from tasks.selectors.providers.chat_selector import ChatSelector
    from tasks.selectors.providers.judge import Unjudged
    from tests.factories.catalogues import support_tools
    from tests.selectors.providers.conftest import chat_options

    inputs = [SelectionInput(request_id=f"r{i}", tools=support_tools(), prompt="Pick the one tool that fits.",
                             messages=(Message(role="user", content=f"where is order NW-12{i:05d}?"),))
              for i in range(3)]
    kept = Unjudged(selection=Selection(request_id="r1", chosen="lookup_order", outcome_hint="ok", latency_ms=1.0,
                                        sent_as="batch", http_attempts=1), reply_text="")
    stages: list[int] = []
    with BatchServer(judged_mixed, api_key=FAKE_KEY, polls_to_end=1) as server:
        options = chat_options(server, "anthropic", batch_poll_s=0.02, **judge_options(server))
        scope = BatchScope(RunLedger(None, "unscoped"), on_chat_stage=lambda i, stage: stages.append(i),
                           chat_stages={1: kept}, batch=BatchSend(None, "exp", "arm", 1, ["k0", "k1", "k2"]))
        with batch_scope(scope):
            rows = ChatSelector("anthropic", MODELS["anthropic"], options).select(inputs)
        chat = [s.user_text for s in server.requests() if s.system != JUDGE_SYSTEM]
        judged = Counter(s.user_text.split("NW-12")[1][:5] for s in server.requests() if s.system == JUDGE_SYSTEM)
    assert sorted(chat) == [inputs[0].messages[0].content, inputs[2].messages[0].content]  # r1's chat call was kept
    assert judged == {"00000": 3, "00001": 3, "00002": 3} and sorted(stages) == [0, 2]
    assert [row.request_id for row in rows] == ["r0", "r1", "r2"] and rows[1].judge_verdict == "right"
    assert rows[1].http_attempts == 1 + 3 and all(len(row.judge_votes or []) == 3 for row in rows)
