"""Prefix-cache scheduling: one (arm, seed) at a time per endpoint, Anthropic's tool list marked
for caching, cached tokens recorded and priced; against the loopback server's model of a prefix cache."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pyarrow.parquet as pq
import pytest

from tasks.run.prefix_lanes import PrefixLane
from tasks.selectors.providers.chat_selector import ChatSelector
from tasks.selectors.providers.pricing import price_for
from tests.factories.catalogues import selection_input, support_tools
from tests.provider_server import PrefixCache, ProviderServer, first_tool
from tests.selectors.providers.conftest import FAKE_KEY, MODELS, chat_options
from tests.selectors.providers.prefix_units import hosted_units, run_like_the_thread_runner


def blocked_at(lane: PrefixLane, *keys, timeout_s: float = 10.0) -> bool:
    """Whether, within ``timeout_s``, exactly ``keys`` wait at the lane's door: read under the lane's lock, a
    waiting key is one whose unit is blocked there, not one that is still deciding."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with lane._turn:
            if lane.waiting == Counter(keys):
                return True
        time.sleep(0.01)
    return False


def test_a_lane_lets_one_prefix_in_at_a_time_and_the_earliest_waiting_next():
    lane, order, inside = PrefixLane(), [], threading.Event()
    release = threading.Event()

    def unit(key, hold=False):
        with lane.hold(key):
            order.append(key)
            if hold:
                inside.set()
                release.wait(10)

    first = threading.Thread(target=unit, args=((1, 1), True))
    first.start()
    assert inside.wait(10)
    same = threading.Thread(target=unit, args=((1, 1),))
    same.start()
    same.join(10)
    assert order == [(1, 1), (1, 1)]  # the same (arm, seed) joins the holder
    later = [threading.Thread(target=unit, args=(key,)) for key in ((1, 3), (1, 2))]
    for thread in later:
        thread.start()
    assert blocked_at(lane, (1, 3), (1, 2))
    assert order == [(1, 1), (1, 1)]  # other seeds wait while seed 1 is inside
    release.set()
    for thread in [first, *later]:
        thread.join(10)
    assert order == [(1, 1), (1, 1), (1, 2), (1, 3)] and lane.switches == 3


def test_a_unit_too_short_of_work_to_fill_the_endpoint_lets_the_next_prefix_in():
    """``LaneHold.tail``: a unit with fewer unfinished items than the endpoint's concurrency (all of them
    running) leaves its lane while it still runs, so the next (arm, seed) fills the idle slots; with as many
    as the concurrency, or at concurrency 1 before its last item ends, it keeps the lane."""
    lane, order = PrefixLane(), []
    checked, draining, done = threading.Event(), threading.Event(), threading.Event()

    def first():
        with lane.hold((1, 1)) as place:
            order.append("seed 1 in")
            place.tail(4, 4)  # four unfinished at concurrency 4: the endpoint is still full
            checked.set()
            draining.wait(10)
            place.tail(3, 4)  # three left: a slot would idle
            done.wait(10)
            order.append("seed 1 out")
            place.leave()  # leaving again (and at the end of the block) does nothing

    def second():
        with lane.hold((1, 2)) as place:
            order.append("seed 2 in")
            place.tail(1, 1)  # concurrency 1: one unfinished keeps the lane
        done.set()

    one = threading.Thread(target=first)
    one.start()
    assert checked.wait(10)
    two = threading.Thread(target=second)
    two.start()
    assert blocked_at(lane, (1, 2))
    assert order == ["seed 1 in"]  # seed 2 waits while seed 1 can fill the endpoint
    draining.set()
    for thread in (one, two):
        thread.join(10)
    assert order == ["seed 1 in", "seed 2 in", "seed 1 out"]
    assert lane.inside == 0 and lane.switches == 2


def test_units_of_one_seed_reach_the_server_together(tmp_path):
    """Three seeds' units, four at a time as the thread runner takes them: the server sees each seed's
    requests in one run (the tool order changes only at a seed's boundary)."""
    with ProviderServer(first_tool, api_key=FAKE_KEY, latency_s=0.002) as server:
        options = chat_options(server, "openai", concurrency=4)
        units = hosted_units("openai", MODELS["openai"], options, n_requests=24, seeds=[1, 2, 3], batch_size=6)
        results = run_like_the_thread_runner(units, tmp_path)
        orders = [seen.tools for seen in server.requests()]
    assert sum(r.n_rows for r in results) == 72
    runs = [orders[0]] + [b for a, b in zip(orders, orders[1:]) if a != b]
    # Without lanes four workers interleave the seeds (dozens of switches). With them a seed is in flight
    # alone; a unit that reaches the lane after its seed's last unit left (a thread started late on a loaded
    # machine) waits for the seed inside and comes back once: one extra run per late unit, never an
    # interleaving. CI (a machine loaded by a training beside it) saw two late units of the 12: 5 runs.
    assert len(set(runs)) == 3 and len(runs) <= 6, len(runs)


def test_anthropic_marks_the_tool_list_for_the_prompt_cache(serve):
    server = serve(first_tool)
    ChatSelector("anthropic", MODELS["anthropic"], chat_options(server, "anthropic")).select(
        [selection_input("where is my order?", support_tools("lookup_order", "track_shipment"))])
    [seen] = server.requests()
    tools = seen.body["tools"]
    assert tools[-1]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in tools[0]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_cached_tokens_of_one_seed_are_recorded_and_priced_at_the_cached_rate(kind, tmp_path):
    with ProviderServer(first_tool, api_key=FAKE_KEY, prefix_cache=PrefixCache(slots=1)) as server:
        options = chat_options(server, kind, concurrency=1)
        units = hosted_units(kind, MODELS[kind], options, n_requests=4, seeds=[1], batch_size=4)
        [result] = run_like_the_thread_runner(units, tmp_path)
    rows = pq.read_table(result.paths[0]).to_pylist()
    price = price_for(MODELS[kind])
    assert rows[0]["cached_input_tokens"] == 0 or kind == "openai"
    warm = [r for r in rows if r["cached_input_tokens"]]
    assert len(warm) >= 3  # every request after the first finds the tool list cached
    for row in warm:
        fresh = row["input_tokens"] - row["cached_input_tokens"] - (row["cache_write_tokens"] or 0)
        expected = (fresh * price.input + row["cached_input_tokens"] * price.cached_input
                    + (row["cache_write_tokens"] or 0) * 1.25 * price.input + row["output_tokens"] * price.output) / 1e6
        assert row["cost_usd"] == pytest.approx(expected)
        assert row["cached_input_tokens"] > row["input_tokens"] / 2  # the tools are most of the prompt
    if kind == "anthropic":
        assert sum(r["cache_write_tokens"] for r in rows) > 0
