"""The batch transport against the loopback Files/Batches server, through both official SDKs: every line
status lands as an outcome, batches split by the per-batch limits, cancellation, refusals, no secret in
the journal or the errors, and a process killed with SIGKILL while waiting (or during the create call)
whose rerun submits no request twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

import pytest

from tasks.selectors.providers.batch.items import BatchItem, BatchLimits, BatchOutcome, custom_id_for
from tasks.selectors.providers.batch.journal import BatchJournal
from tasks.selectors.providers.batch.run_batches import PollPolicy, chunk_key_for, run_batches
from tasks.selectors.providers.anthropic_messages import AnthropicMessages
from tasks.selectors.providers.openai_chat import OpenAIChat
from tests.batch_child import items
from tests.batch_server import BatchServer
from tests.provider_server import Seen, status_reply, text_reply, tool_call
from tests.selectors.providers.conftest import FAKE_KEY

PROVIDERS = ("openai", "anthropic")
FAST = PollPolicy(first_s=0.01, max_s=0.05)
REPO = Path(__file__).resolve().parents[3]


def url(server: BatchServer, provider: str) -> str:
    return server.openai_url if provider == "openai" else server.anthropic_url


def send(provider: str, server: BatchServer, journal: BatchJournal, batch_items: list[BatchItem],
         **kwargs: Any) -> dict[str, BatchOutcome]:
    """``run_batches`` against the loopback server with the test key and quick polls."""
    return run_batches(provider, batch_items, journal=journal, base_url=url(server, provider), api_key=FAKE_KEY,
                       poll=FAST, **kwargs)


def mixed(seen: Seen) -> Any:
    """Request 1 fails with a 500, request 2 answers in text, request 3 answers 200 with an error body,
    request 4 calls a tool with malformed arguments, request 5's usage is no object; the rest call the
    first tool."""
    number = seen.user_text.rsplit(" ", 1)[-1]
    if number == "1":
        return status_reply(500, error_message="overloaded")
    if number == "2":
        return text_reply("Which city?")
    if number == "3":
        return tool_call(seen.tools[0], reshape=lambda body: {"error": {"type": "server_error", "message": "boom"}})
    if number == "4":
        return tool_call(seen.tools[0], arguments="{not json")  # Anthropic: a tool_use input that is a string
    if number == "5":
        return tool_call(seen.tools[0], reshape=lambda body: {**body, "usage": 3})  # no reader knows it
    return tool_call(seen.tools[0])


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[BatchJournal]:
    with BatchJournal(tmp_path / "batch_journal.sqlite") as opened:
        yield opened


@pytest.mark.parametrize("provider", PROVIDERS)
def test_outcomes_match_the_synchronous_replies(provider: str, journal: BatchJournal) -> None:
    batch_items = items(provider, 7)
    with BatchServer(mixed, api_key=FAKE_KEY, polls_to_end=3) as server:
        outcomes = send(provider, server, journal, batch_items)
        chat = (OpenAIChat if provider == "openai" else AnthropicMessages)(FAKE_KEY, url(server, provider), {})
        sync = {item.custom_id: chat.complete(item.request, timeout_s=5) for i, item in enumerate(batch_items)
                if i not in (1, 3, 5)}
    assert list(outcomes) == [item.custom_id for item in batch_items]
    statuses = [outcomes[item.custom_id].status for item in batch_items]
    assert statuses == ["succeeded", "errored", "succeeded", "errored", "succeeded", "errored", "succeeded"]
    assert "could not be read" in outcomes[batch_items[5].custom_id].error
    for cid, reply in sync.items():  # the same reply, tokens and served model as the synchronous call
        assert outcomes[cid].reply == reply
    assert outcomes[batch_items[2].custom_id].reply.tool_name is None
    assert outcomes[batch_items[4].custom_id].reply.arguments == "{not json"
    assert "overloaded" in outcomes[batch_items[1].custom_id].error
    assert "error body" in outcomes[batch_items[3].custom_id].error
    assert len(server.batches) == 1 and set(server.submissions.values()) == {1}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_expiry_keeps_the_partial_results(provider: str, journal: BatchJournal) -> None:
    batch_items = items(provider, 8)
    with BatchServer(api_key=FAKE_KEY, polls_to_end=4, expire_at_poll=3) as server:
        outcomes = send(provider, server, journal, batch_items)
    statuses = [outcomes[item.custom_id].status for item in batch_items]
    assert statuses == ["succeeded"] * 4 + ["expired"] * 4
    assert all(outcomes[item.custom_id].reply.tool_name == "get_weather" for item in batch_items[:4])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancelling_cancels_at_the_provider(provider: str, journal: BatchJournal) -> None:
    batch_items = items(provider, 6)
    with BatchServer(api_key=FAKE_KEY, polls_to_end=3) as server:
        def should_cancel() -> bool:  # once the first poll ran a share of the lines
            return any(batch.polls for batch in server.batches.values())

        outcomes = send(provider, server, journal, batch_items, should_cancel=should_cancel)
        [batch] = server.batches.values()
    assert batch.cancel_requested
    statuses = [outcomes[item.custom_id].status for item in batch_items]
    assert statuses == ["succeeded"] * 2 + ["canceled"] * 4
    chunk = journal.chunk(next(iter(journal.chunk_keys(f"{provider} {url(server, provider)}",
                                                        [batch_items[0].custom_id]))))
    assert chunk is not None and chunk.cancel_requested and chunk.state == "ended"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_batches_split_by_request_count_and_bytes(provider: str, journal: BatchJournal) -> None:
    batch_items = items(provider, 7)
    with BatchServer(api_key=FAKE_KEY, polls_to_end=1, max_requests=3) as server:
        outcomes = send(provider, server, journal, batch_items, limits=BatchLimits(max_requests=3, max_bytes=10**6))
        by_count = sorted(len(b.lines) for b in server.batches.values())
    assert by_count == [1, 3, 3]
    assert {o.status for o in outcomes.values()} == {"succeeded"}

    line_bytes = 2 * 1024  # each line is well under 1 KiB: two fit, three do not
    with BatchServer(api_key=FAKE_KEY, polls_to_end=1) as server:
        send(provider, server, journal, items(provider, 5, run_id="run-bytes"),
             limits=BatchLimits(max_requests=100, max_bytes=line_bytes))
        sizes = sorted(len(b.lines) for b in server.batches.values())
    assert sum(sizes) == 5 and max(sizes) < 5 and len(sizes) >= 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_batch_over_the_providers_limit_lands_as_errors(provider: str, journal: BatchJournal) -> None:
    batch_items = items(provider, 4)
    with BatchServer(api_key=FAKE_KEY, polls_to_end=1, max_requests=2) as server:
        outcomes = send(provider, server, journal, batch_items)
    assert {o.status for o in outcomes.values()} == {"errored"}
    assert all("more than 2" in (o.error or "") for o in outcomes.values())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_refused_key_is_scrubbed_and_not_journaled(provider: str, tmp_path: Path) -> None:
    path = tmp_path / "batch_journal.sqlite"
    with BatchServer(api_key=FAKE_KEY) as server, BatchJournal(path) as journal:
        outcomes = run_batches(provider, items(provider, 2), journal=journal, base_url=url(server, provider),
                               api_key="sk-wrong-key-0123456789abcdef", poll=FAST)
        assert not journal.chunk_keys(f"{provider} {url(server, provider)}", list(outcomes))
    for outcome in outcomes.values():
        assert outcome.status == "errored" and outcome.batch_id == ""
        assert "401" in outcome.error and "0123456789abcdef" not in outcome.error
    assert FAKE_KEY.encode() not in path.read_bytes()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_rerun_answers_from_the_journal(provider: str, journal: BatchJournal) -> None:
    batch_items = items(provider, 3)
    with BatchServer(api_key=FAKE_KEY, polls_to_end=1) as server:
        first = send(provider, server, journal, batch_items)
        again = send(provider, server, journal, batch_items)
        changed = [replace(item, request=replace(item.request, max_tokens=7)) for item in batch_items]
        third = send(provider, server, journal, changed)
    assert again == first and len(server.batches) == 1  # the changed requests are not sent either
    assert all(o.status == "errored" and "different request" in (o.error or "") for o in third.values())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_batch_the_provider_lost_lands_as_errors_and_stays_journaled(provider: str,
                                                                        journal: BatchJournal) -> None:
    batch_items = items(provider, 2)
    with BatchServer(api_key=FAKE_KEY, polls_to_end=1) as server:
        outcomes = send(provider, server, journal, batch_items,
                        on_submitted=lambda batch_id, n: server.batches.pop(batch_id))
    assert all(o.status == "errored" and "could not be polled" in (o.error or "") for o in outcomes.values())
    [key] = journal.chunk_keys(f"{provider} {url(server, provider)}", list(outcomes))
    chunk = journal.chunk(key)
    assert chunk is not None and chunk.state == "submitted" and chunk.batch_id  # a rerun polls it again


@pytest.mark.parametrize("provider", PROVIDERS)
def test_without_blocking_each_call_lands_what_ended(provider: str, journal: BatchJournal) -> None:
    batch_items = items(provider, 4)
    with BatchServer(api_key=FAKE_KEY, polls_to_end=2, fail_retrieves=1) as server:
        calls = [send(provider, server, journal, batch_items, block=False) for _ in range(4)]
    # the first call's poll is refused (503), retried at once and runs half the lines; the next ends the batch
    assert [len(outcomes) for outcomes in calls] == [0, 4, 4, 4]
    assert calls[1] == calls[3] and {o.status for o in calls[1].values()} == {"succeeded"}
    assert len(server.batches) == 1 and set(server.submissions.values()) == {1}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_two_callers_of_the_same_items_share_one_batch(provider: str, tmp_path: Path) -> None:
    batch_items = items(provider, 3)
    results: dict[str, dict[str, BatchOutcome]] = {}

    def call(name: str) -> None:
        with BatchJournal(tmp_path / "batch_journal.sqlite") as journal:
            results[name] = send(provider, server, journal, batch_items)

    with BatchServer(api_key=FAKE_KEY, polls_to_end=1) as server:
        server.hold_creates.set()  # the first caller is inside its create call when the second starts
        first = threading.Thread(target=call, args=("first",))
        first.start()
        assert server.create_arrived.wait(120)
        second = threading.Thread(target=call, args=("second",))
        second.start()
        second.join(0.5)
        assert second.is_alive()  # waiting on the first caller's batch, not submitting its own
        server.release_creates.set()
        first.join(60)
        second.join(60)
    assert results["first"] == results["second"] and len(results["first"]) == 3
    assert len(server.batches) == 1 and set(server.submissions.values()) == {1}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_intent_whose_batch_never_reached_the_provider_is_sent(provider: str, journal: BatchJournal) -> None:
    batch_items = items(provider, 2)
    with BatchServer(api_key=FAKE_KEY, polls_to_end=1) as server:
        endpoint = f"{provider} {url(server, provider)}"
        # the intent as a process killed before its create call left this machine leaves it
        assert journal.claim(endpoint, "chunk-lost", batch_items[0].request.model, "h",
                             [(item.custom_id, "h", "") for item in batch_items])
        refused = run_batches(provider, batch_items, journal=journal, base_url=url(server, provider),
                              api_key="sk-wrong-key-0123456789abcdef", poll=FAST)
        assert all("could not be looked up" in (o.error or "") for o in refused.values())
        assert journal.chunk("chunk-lost") is not None  # kept: the listing did not answer
        outcomes = send(provider, server, journal, batch_items)
    assert journal.chunk("chunk-lost") is None and len(server.batches) == 1
    assert {o.status for o in outcomes.values()} == {"succeeded"}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_another_callers_batch_found_by_the_listing_is_not_taken_for_ours(provider: str,
                                                                          journal: BatchJournal) -> None:
    batch_items = items(provider, 2)
    with BatchServer(api_key=FAKE_KEY, polls_to_end=1) as server:
        endpoint = f"{provider} {url(server, provider)}"
        # the intent under the key the items' own batch takes: the batch sent after all reuses it
        assert journal.claim(endpoint, chunk_key_for(endpoint, [item.custom_id for item in batch_items]),
                             batch_items[0].request.model, "h", [(item.custom_id, "h", "") for item in batch_items])
        with BatchJournal(None) as theirs:  # as many requests, created after our intent: Anthropic's listing
            send(provider, server, theirs, items(provider, 2, run_id="another-run"))  # cannot tell them apart
        outcomes = send(provider, server, journal, batch_items)
    assert {o.status for o in outcomes.values()} == {"succeeded"}
    assert len(server.batches) == 2 and set(server.submissions.values()) == {1}
    assert all(o.batch_id != next(iter(server.batches)) for o in outcomes.values())


def test_custom_ids_are_deterministic_and_anthropic_safe() -> None:
    first = custom_id_for("run/1", "arm a", 2, "req:7")
    assert first == custom_id_for("run/1", "arm a", 2, "req:7")
    assert first != custom_id_for("run/1", "arm a", 2, "req:7", attempt=1)
    assert len(first) <= 64 and first.replace("-", "").replace("_", "").isalnum()


# -- a killed process ---------------------------------------------------------------------------------------

def start_child(provider: str, server: BatchServer, journal: Path, n: int) -> subprocess.Popen[str]:
    env = {**os.environ, "BATCH_CHILD_KEY": FAKE_KEY, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "tests.batch_child", provider, url(server, provider),
                             str(journal), str(n)], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)


def finish_child(provider: str, server: BatchServer, journal: Path, n: int) -> tuple[list[str], dict[str, Any]]:
    child = start_child(provider, server, journal, n)
    out, _ = child.communicate(timeout=300)
    assert child.returncode == 0, out
    lines = out.splitlines()
    return [line for line in lines if line.startswith("submitted ")], json.loads(lines[-1])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_kill_9_while_waiting_then_rerun_submits_nothing_twice(provider: str, tmp_path: Path) -> None:
    journal = tmp_path / "batch_journal.sqlite"
    with BatchServer(api_key=FAKE_KEY, polls_to_end=2) as server:
        server.hold_batches.set()  # the batch waits until the child is dead
        child = start_child(provider, server, journal, 5)
        assert child.stdout is not None
        assert child.stdout.readline().startswith("submitted ")
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        server.hold_batches.clear()
        submitted, outcomes = finish_child(provider, server, journal, 5)
    assert submitted == []  # the rerun found the batch in the journal
    assert len(server.batches) == 1 and set(server.submissions.values()) == {1}
    assert len(server.submissions) == len(outcomes) == 5
    assert {status for status, _, _ in outcomes.values()} == {"succeeded"}
    assert FAKE_KEY.encode() not in journal.read_bytes()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_kill_9_during_the_create_call_then_rerun_adopts_the_batch(provider: str, tmp_path: Path) -> None:
    journal = tmp_path / "batch_journal.sqlite"
    with BatchServer(api_key=FAKE_KEY, polls_to_end=2) as server:
        server.hold_creates.set()  # the batch exists at the provider; the child never hears its id
        child = start_child(provider, server, journal, 4)
        assert server.create_arrived.wait(300)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        server.hold_creates.clear()
        server.release_creates.set()
        with BatchJournal(journal) as opened:  # the intent is journaled, the batch id is not
            [key] = opened.chunk_keys(f"{provider} {url(server, provider)}",
                                      [item.custom_id for item in items(provider, 4)])
            chunk = opened.chunk(key)
            assert chunk is not None and chunk.batch_id is None and chunk.state == "intent"
        submitted, outcomes = finish_child(provider, server, journal, 4)
    assert submitted == []  # found at the provider, not sent again
    assert len(server.batches) == 1 and set(server.submissions.values()) == {1}
    assert {status for status, _, _ in outcomes.values()} == {"succeeded"} and len(outcomes) == 4
