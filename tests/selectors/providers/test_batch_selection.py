"""A plain hosted arm's units sent as provider batches (``batch_selection.py``), against the loopback server's
batch endpoints (tests/batch_server.py, the same script as its synchronous endpoints): the same rows as calls
at half the cost, failed batch requests sent again as calls, the caps held at submission, the cache honoured,
a stopping run's batch cancelled at the provider."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tasks.core_records import RunContext
from tasks.selection.select_batch import select_and_land
from tasks.selectors.providers import batch_selection
from tasks.selectors.providers.call_budget import BUDGET_REACHED, spent_in_run
from tests.batch_server import BatchServer
from tests.provider_server import Reply, Seen, status_reply, text_reply, tool_call
from tests.selectors.providers.conftest import FAKE_KEY, MODELS, chat_options
from tests.selectors.providers.prefix_units import hosted_units

N = 6
COMPARED = ("request_id", "seed", "chosen", "outcome", "correct", "invalid", "empty", "error", "detail", "arguments",
            "input_tokens", "output_tokens", "served_model_id", "stop_reason", "n_tool_calls", "chat_n_tools",
            "arguments_correct", "served_model_evidence")


def mixed(seen: Seen) -> Reply:
    """Each request its own kind of reply: a valid call, text ('none'), an unknown tool, arguments that break
    the schema, a cut-off reply, a valid call of another tool."""
    number = int(seen.user_text.split("NW-12")[1][:5])
    replies = [tool_call("lookup_order", {"order_id": "NW-1234567"}), text_reply("Could you say more?"),
               tool_call("no_such_tool", {}), tool_call("lookup_order", "{not json"),
               Reply(text="cut", finish="length" if seen.api == "openai" else "max_tokens"),
               tool_call("track_shipment", {"order_id": "NW-1234567"})]
    return replies[number % len(replies)]


def run_units(kind: str, server: BatchServer, tmp: Path, name: str, batch: bool, seeds=(1, 2), cache: bool = True,
              max_calls: int | None = None, **options: Any) -> list[dict]:
    options = {"batch_poll_s": 0.02, **options}
    units = hosted_units(kind, MODELS[kind], chat_options(server, kind, **options),
                         n_requests=N, seeds=list(seeds), batch_size=N)
    ctx = RunContext(name, "exp", tmp / name / "rows", tmp / "cache" / "selections.sqlite" if cache else None,
                     tmp / "ledger.sqlite", max_calls=max_calls, batch=batch)
    for unit in units:
        select_and_land(unit, ctx)
    return [row for path in sorted((tmp / name / "rows").rglob("*.parquet")) for row in pq.read_table(path).to_pylist()]


def by_key(rows: list[dict]) -> dict[tuple, dict]:
    return {(row["seed"], row["request_id"]): row for row in rows}


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_batch_gives_the_rows_of_calls_at_half_the_cost(kind, tmp_path):
    with BatchServer(mixed, api_key=FAKE_KEY, polls_to_end=2) as server:
        calls = run_units(kind, server, tmp_path, "sync", batch=False, cache=False)
        assert not server.batches and len(server.requests()) == 2 * N
        batched = run_units(kind, server, tmp_path, "batch", batch=True, cache=False)
        assert len(server.batches) == 2 and sorted(server.submissions.values()) == [1] * (2 * N)  # a batch per unit
        assert len(server.requests()) == 4 * N  # the batch lines ran through the same script, once each
    calls, batched = by_key(calls), by_key(batched)
    assert calls.keys() == batched.keys() and len(calls) == 2 * N
    outcomes = {row["outcome"] for row in calls.values()}
    assert {"correct", "no_tool", "invalid", "empty", "wrong_tool"} <= outcomes
    for key, call in calls.items():
        sent = batched[key]
        assert {c: sent[c] for c in COMPARED} == {c: call[c] for c in COMPARED}, key
        assert call["sent_as"] == "call" and call["batch_id"] is None
        assert sent["sent_as"] == "batch" and sent["batch_id"] in server.batches and sent["retries"] == 0
        assert sent["http_attempts"] == call["http_attempts"] == 1
        assert call["cost_usd"] > 0 and sent["cost_usd"] == pytest.approx(call["cost_usd"] / 2, rel=1e-9)
        assert sent["price_version"] == call["price_version"]


def test_a_request_whose_batch_line_failed_or_expired_is_sent_again_as_a_call(tmp_path):
    def script(seen: Seen) -> Reply:
        if "NW-1200000" in seen.user_text and seen.attempt == 0:
            return status_reply(500)  # its batch line errors; the call after it answers
        return tool_call("lookup_order", {"order_id": "NW-1234567"})

    # two polls run half the lines each; the batch expires at the second: the other half is expired
    with BatchServer(script, api_key=FAKE_KEY, polls_to_end=2, expire_at_poll=2) as server:
        rows = run_units("openai", server, tmp_path, "run", batch=True, seeds=(1,))
        [batch_id] = server.batches
        assert sorted(server.submissions.values()) == [1] * N
        sync = [s for s in server.requests() if s.attempt or "NW-1200000" not in s.user_text]
    again = [row for row in rows if row["sent_as"] == "call_after_batch"]
    assert len(again) == 1 + N // 2 and all(row["batch_id"] == batch_id for row in again)
    assert all(row["correct"] and row["retries"] == 1 and row["http_attempts"] == 2 for row in again)
    assert {row["request_id"] for row in rows if row["sent_as"] == "batch"} == {
        f"r{i}" for i in range(1, N // 2)}
    assert all(row["correct"] for row in rows) and len(rows) == N
    spent = spent_in_run(tmp_path / "ledger.sqlite", "run")  # every request that left counted, batch lines too
    assert spent.calls == sum(row["http_attempts"] for row in rows) == N + len(again)
    assert spent.spend_usd == pytest.approx(sum(row["cost_usd"] for row in rows))
    assert len(sync) == len(server.requests()) - 1  # the errored line ran once; everything else answered


def test_the_caps_hold_at_submission_and_a_rerun_submits_only_what_the_cache_lacks(tmp_path):
    with BatchServer(mixed, api_key=FAKE_KEY) as server:
        rows = run_units("anthropic", server, tmp_path, "capped", batch=True, seeds=(1,), max_calls=4)
        assert sum(server.submissions.values()) == 4  # reserved before submission: two never left
        assert sum(row["detail"] == BUDGET_REACHED and row["error"] for row in rows) == 2
        rows = run_units("anthropic", server, tmp_path, "resumed", batch=True, seeds=(1,))
        assert sum(server.submissions.values()) == N and set(server.submissions.values()) == {1}
        assert sum(row["cache_hit"] for row in rows) == 4 and not any(row["error"] for row in rows)
        run_units("anthropic", server, tmp_path, "cached", batch=True, seeds=(1,))
        assert sum(server.submissions.values()) == N  # every row cached: nothing submitted


@pytest.fixture
def stop_cleared():
    yield
    batch_selection._stop.clear()  # the process's stop, set by the test as a signal would


def test_a_stopping_run_cancels_its_batch_at_the_provider(tmp_path, stop_cleared):
    with BatchServer(mixed, api_key=FAKE_KEY) as server:
        server.hold_batches.set()  # nothing runs until the cancel
        done: list[list[dict]] = []
        worker = threading.Thread(target=lambda: done.append(
            run_units("openai", server, tmp_path, "run", batch=True, seeds=(1,), batch_poll_s=30.0)))
        worker.start()
        while not server.batches:
            worker.join(0.02)
        time.sleep(0.2)  # the unit is asleep between polls: the stop wakes it
        started = time.monotonic()
        assert batch_selection.cancel_waiting_batches(timeout_s=10.0) == 1
        [batch] = server.batches.values()
        assert batch.cancel_requested and time.monotonic() - started < 5.0  # not the 30 s poll interval
        server.hold_batches.clear()
        worker.join(60)
        assert batch.status == "cancelled"
    [rows] = done
    assert all(row["error"] and row["detail"] == batch_selection.STOPPED for row in rows)
    assert len(rows) == N and not server.requests()  # not one line ran, and none was sent as a call


def test_a_run_stopping_before_its_unit_submits_sends_nothing(tmp_path, stop_cleared):
    with BatchServer(mixed, api_key=FAKE_KEY) as server:
        batch_selection.cancel_waiting_batches(timeout_s=0.0)
        rows = run_units("anthropic", server, tmp_path, "run", batch=True, seeds=(1,))
        assert not server.batches and not server.requests()
    assert all(row["detail"] == batch_selection.STOPPED and row["http_attempts"] == 0 and row["batch_id"] is None
               for row in rows) and len(rows) == N
    assert spent_in_run(tmp_path / "ledger.sqlite", "run").calls == 0


def test_an_arm_whose_judge_has_no_batch_price_keeps_its_calls(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(batch_selection, "_noted", set())  # the note is said once per process and model
    with BatchServer(mixed, api_key=FAKE_KEY) as server:
        judge = {"model": "judge-model-x", "selector": "openai", "base_url": server.openai_url, "votes": 1,
                 "prices": {"input": 1.0, "output": 2.0}}  # a stated price with no batch price
        rows = run_units("openai", server, tmp_path, "judged", batch=True, seeds=(1,), judge=judge)
        assert not server.batches
    assert {row["sent_as"] for row in rows} == {"call"} and len(rows) == N
    assert "judge-model-x has no batch price: sent as synchronous calls" in caplog.text


def test_batch_on_an_arm_or_the_experiment_is_a_transport_option_out_of_the_cache_key(tmp_path):
    from flows.cli import build_parser
    from tasks.experiment.resolve_experiment import resolve_experiment
    from tasks.files.input_errors import InputError
    from tasks.selection.plan_batch import selector_fingerprint
    from tests.factories.taskset import write_experiment, write_taskset

    model = MODELS["openai"]
    arms = [{"name": "calls", "selector": "openai", "model": model},
            {"name": "batched", "selector": "openai", "model": model, "batch": True, "options": {"batch_poll_s": 5}}]
    root = write_taskset(tmp_path / "shop")
    defaults = {"catalogue": "base", "prompt": "default"}
    resolved = resolve_experiment(write_experiment(root, arms=arms, defaults=defaults, batch=True))
    calls, batched = resolved.arms
    assert resolved.spec.batch is True and "batch" not in calls.options and batched.options["batch"] is True
    assert selector_fingerprint(calls) == selector_fingerprint(batched)  # the same answers: the same cache rows
    compared = write_experiment(root, arms=arms, defaults=defaults, comparisons=[{"from": "calls", "to": "batched"}])
    with pytest.raises(InputError, match=r"\[one-change\] the two arms are identical"):
        resolve_experiment(compared)  # batching changes how requests travel, not an answer
    assert build_parser().parse_args(["run", "x.yaml", "--batch"]).batch is True
    assert build_parser().parse_args(["run", "x.yaml"]).batch is False


@pytest.mark.parametrize("options,rule", [({"batch": "yes"}, "option-value"), ({"batch_poll_s": 0}, "option-value"),
                                          ({"batch": True, "prices": {"input": 1, "output": 2}}, "price-known")])
def test_bad_batch_options_are_refused(options, rule):
    from tasks.selectors.providers.chat_options import check_hosted_arm

    _, problems = check_hosted_arm("openai", MODELS["openai"], options)
    assert [found for found, _ in problems] == [rule]
