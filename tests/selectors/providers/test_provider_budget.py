"""The run's spend and call caps: shared across threads and processes; reaching one stops new calls
cleanly, lands the rest as uncached 'budget reached' errors, and a rerun resumes without repeating a call."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from schemas.catalogue import Catalogue
from schemas.taskset import LabelledRequest, Message
from tasks.selection.arms import SelectionArm
from tasks.selection.plan_batch import plan_batch, plan_arm_seed
from tasks.run.work_units import RunContext
from tasks.selection.select_batch import select_and_land
from tasks.run.result_cache import ResultCache
from tasks.selection.select_batch import SELECTIONS
from tasks.selectors.providers.call_budget import BUDGET_REACHED, BatchScope, RunLedger, batch_scope, spent_in_run
from tasks.selectors.providers.chat_selector import ChatSelector
from tests.factories import ROOT
from tests.factories.catalogues import selection_input, support_tools
from tests.provider_server import oracle, tool_call
from tests.selectors.providers.conftest import MODELS, chat_options

TOOLS = support_tools("lookup_order", "track_shipment", "refund_order")


def test_call_cap_is_never_passed_by_many_threads(tmp_path):
    with RunLedger(tmp_path / "l.sqlite", "r1", max_calls=25) as ledger:
        with ThreadPoolExecutor(8) as pool:
            taken = list(pool.map(lambda _: ledger.reserve(0.0) is not None, range(100)))
        summary = ledger.summary()
    assert sum(taken) == 25 and summary.calls == 25 and summary.refused == 75


RESERVE_MANY = """
import sys
from pathlib import Path
from tasks.selectors.providers.call_budget import RunLedger
with RunLedger(Path(sys.argv[1]), "shared-run") as ledger:
    print(sum(ledger.reserve(0.001) is not None for _ in range(int(sys.argv[2]))))
"""


def test_caps_are_shared_across_processes(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with RunLedger(path, "shared-run", max_calls=30, max_spend_usd=1.0):
        pass
    processes = [subprocess.Popen([sys.executable, "-c", RESERVE_MANY, str(path), "20"], cwd=ROOT,
                                  stdout=subprocess.PIPE, text=True) for _ in range(3)]
    taken = [int(process.communicate(timeout=60)[0]) for process in processes]
    with RunLedger(path, "shared-run") as ledger:
        summary = ledger.summary()
    assert sum(taken) == 30 and summary.calls == 30 and summary.max_calls == 30 and summary.refused == 30


def test_an_uncapped_run_counts_in_memory_and_adds_to_the_file_when_each_opener_closes(tmp_path):
    """Without caps nothing is refused, so no call waits on a committed transaction: every opener's counts
    reach the shared file together, when it closes, and the openers' counts add up."""
    path = tmp_path / "ledger.sqlite"

    def calls(ledger: RunLedger, n: int) -> None:
        for _ in range(n):
            ledger.settle(ledger.reserve(0.01), 0.002, unknown_cost_calls=0)
        ledger.settle(ledger.reserve(0.01, calls=2), None, calls_used=1, unknown_cost_calls=1)
        assert ledger.reserve_retry()

    first, second = RunLedger(path, "free"), RunLedger(path, "free")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: calls(first, 5), range(8)))
    calls(second, 3)
    with RunLedger(path, "other-reader") as reader:
        before = spent_in_run(reader.path, "free")
    first.close()
    after_first = spent_in_run(path, "free")
    second.close()
    total = spent_in_run(path, "free")
    assert (before.calls, before.spend_usd) == (0, 0.0)
    assert after_first.calls == 8 * 7 and after_first.unknown_cost_calls == 8
    assert total.calls == 8 * 7 + 5 and total.unknown_cost_calls == 9 and total.refused == 0
    assert total.spend_usd == pytest.approx(0.002 * 43 + 0.01 * 9)


def test_an_opener_without_caps_in_a_capped_run_still_refuses_at_the_cap(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with RunLedger(path, "capped", max_calls=2):
        pass
    with RunLedger(path, "capped") as ledger:
        assert ledger.reserve() and ledger.reserve() and ledger.reserve() is None
        assert ledger.summary().refused == 1


def test_spend_cap_counts_reservations_in_flight_and_settles_to_the_billed_cost(tmp_path):
    with RunLedger(tmp_path / "l.sqlite", "r", max_spend_usd=0.010) as ledger:
        first = ledger.reserve(0.004)
        second = ledger.reserve(0.004)
        assert first and second and ledger.reserve(0.004) is None  # 0.008 in flight + 0.004 > 0.010
        ledger.settle(first, 0.001)
        ledger.settle(second, 0.001)
        assert ledger.reserve(0.004) is not None  # 0.002 spent + 0.004 fits
        summary = ledger.summary()
    assert summary.spend_usd == pytest.approx(0.002) and summary.refused == 1


def test_runs_have_separate_budgets(tmp_path):
    path = tmp_path / "l.sqlite"
    with RunLedger(path, "a", max_calls=1) as a, RunLedger(path, "b", max_calls=1) as b:
        assert a.reserve() and b.reserve() and not a.reserve()


def test_a_selector_stops_at_the_cap_and_marks_the_rest(serve, ledger):
    server = serve(lambda s: tool_call("lookup_order", {"order_id": "NW-1234567"}))
    capped = RunLedger(ledger.path, "capped", max_calls=3)
    selector = ChatSelector("openai", MODELS["openai"], chat_options(server, "openai", concurrency=2))
    with batch_scope(BatchScope(capped)):
        answers = selector.select([selection_input("where is NW-1234567", TOOLS, f"q{i}") for i in range(8)])
    assert sum(a.outcome_hint == "ok" for a in answers) == 3
    assert sum(a.outcome_hint == "error" and a.detail == BUDGET_REACHED for a in answers) == 5
    assert len(server.requests()) == 3
    summary = capped.summary()
    assert summary.calls == 3 and summary.refused == 5 and summary.spend_usd > 0
    capped.close()


def _unit(server, tmp_path: Path, n: int, concurrency: int = 4):
    requests = tuple(
        LabelledRequest(id=f"r{i}", messages=(Message(role="user", content=f"where is order NW-12345{i:02d}"),),
                        expected="lookup_order", slice="existing")
        for i in range(n)
    )
    arm = SelectionArm(name="gpt", rung=1, catalogue_name="base", catalogue=Catalogue(name="base", tools=TOOLS),
                      prompt_name="default", prompt_text="You are the agent.", model_id=MODELS["openai"],
                      selector="openai", version="v1", options=chat_options(server, "openai", concurrency=concurrency))
    [unit] = plan_arm_seed(arm, 1, requests, "shop", batch_size=n)
    return unit


def test_budget_reached_rows_land_uncached_and_a_rerun_resumes_without_repeating(serve, tmp_path):
    server = serve(lambda s: tool_call("lookup_order", {"order_id": "NW-1234567"}))
    unit = _unit(server, tmp_path, 10)
    cache_path, ledger_path = tmp_path / "cache" / "selections.sqlite", tmp_path / "cache" / "run_ledger.sqlite"

    first = select_and_land(unit, RunContext("run-1", "exp", tmp_path / "rows", cache_path, ledger_path, max_calls=4))
    rows = pq.read_table(first.paths[0]).to_pylist()
    assert first.n_rows == 10 and first.n_budget_stopped == 6 and len(server.requests()) == 4
    stopped = [r for r in rows if r["detail"] == BUDGET_REACHED]
    assert len(stopped) == 6 and all(r["error"] and r["outcome"] == "error" and r["chosen"] is None for r in stopped)
    with ResultCache(cache_path, SELECTIONS) as cache:
        assert len(cache.get_many(p.cache_key for p in plan_batch(unit))) == 4  # errors are never cached

    second = select_and_land(unit, RunContext("run-2", "exp", tmp_path / "rows", cache_path, ledger_path))
    assert second.n_cache_hits == 4 and second.n_budget_stopped == 0 and second.n_ok == 10
    assert len(server.requests()) == 10  # the 4 completed calls were not repeated

    third = select_and_land(unit, RunContext("run-3", "exp", tmp_path / "rows", cache_path, ledger_path))
    assert third.n_cache_hits == 10 and len(server.requests()) == 10


def test_each_answer_is_cached_as_it_completes(serve, tmp_path):
    """A crash mid-batch loses no completed call: answers reach the cache before the batch ends."""
    seen_in_cache: list[int] = []
    cache_path = tmp_path / "cache" / "selections.sqlite"

    def script(seen):
        with ResultCache(cache_path, SELECTIONS) as cache:
            seen_in_cache.append(len(cache.get_many(p.cache_key for p in plan_batch(unit))))
        return tool_call("lookup_order", {"order_id": "NW-1234567"})

    server = serve(script)
    unit = _unit(server, tmp_path, 6, concurrency=1)
    select_and_land(unit, RunContext("run-1", "exp", tmp_path / "rows", cache_path, tmp_path / "ledger.sqlite"))
    assert seen_in_cache[-1] >= 1  # answers before the last call were already in the cache


def test_a_routed_turn_is_reserved_whole_so_no_paid_router_call_is_left_behind(serve, tmp_path):
    text = "where is my order NW-1234567?"
    server = serve(oracle({text: "lookup_order"}, {"lookup_order": {"order_id": "NW-1234567"}}))
    options = chat_options(server, "openai", concurrency=1, route="gated", router="llm", threshold=0.5,
                           router_model=MODELS["openai"], router_options={"base_url": server.openai_url})
    selector = ChatSelector("openai", MODELS["openai"], options)
    with RunLedger(tmp_path / "l.sqlite", "routed", max_calls=5) as capped, batch_scope(BatchScope(capped)):
        answers = selector.select([selection_input(text, TOOLS, f"q{i}") for i in range(4)])
        summary = capped.summary()
    assert [a.outcome_hint for a in answers].count("ok") == 2 and summary.calls == 4
    assert len(server.requests(router=True)) == len(server.requests(router=False)) == 2
    assert all(a.detail == BUDGET_REACHED for a in answers if a.outcome_hint == "error")


def test_a_ledger_written_before_unknown_costs_were_counted_still_opens(tmp_path):
    import sqlite3

    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.execute("""CREATE TABLE run_budget (run_id TEXT PRIMARY KEY, max_calls INTEGER, max_spend_usd REAL,
        calls INTEGER NOT NULL DEFAULT 0, spend_usd REAL NOT NULL DEFAULT 0,
        reserved_usd REAL NOT NULL DEFAULT 0, refused INTEGER NOT NULL DEFAULT 0)""")
    con.execute("INSERT INTO run_budget (run_id, calls) VALUES ('old', 7)")
    con.commit()
    con.close()
    with RunLedger(path, "old") as ledger:
        reservation = ledger.reserve(0.01)
        ledger.settle(reservation, None, unknown_cost_calls=1)
        summary = ledger.summary()
    assert summary.calls == 8 and summary.unknown_cost_calls == 1 and summary.spend_usd == pytest.approx(0.01)


def test_a_ledger_from_before_unknown_cost_calls_opens_in_many_units_at_once(tmp_path):
    """Every work unit opens the shared ledger; on a file written before the column existed they all see it
    missing and race to add it (the demo crashed on 'duplicate column name'): each must open cleanly."""
    import sqlite3

    from tasks.files.sqlite_files import add_column_if_missing

    path = tmp_path / "ledger.sqlite"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE run_budget (run_id TEXT PRIMARY KEY, max_calls INTEGER, max_spend_usd REAL, "
                "calls INTEGER NOT NULL DEFAULT 0, spend_usd REAL NOT NULL DEFAULT 0, "
                "reserved_usd REAL NOT NULL DEFAULT 0, refused INTEGER NOT NULL DEFAULT 0)")
    old.commit()
    for _ in range(2):  # a second adder that looked before the first added it: no error
        add_column_if_missing(old, "run_budget", "unknown_cost_calls", "INTEGER NOT NULL DEFAULT 0")
    old.close()
    with ThreadPoolExecutor(8) as pool:
        ledgers = list(pool.map(lambda n: RunLedger(path, f"run{n}"), range(8)))
    assert all(ledger.summary().unknown_cost_calls == 0 for ledger in ledgers)
