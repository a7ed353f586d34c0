"""Prefix lanes for task arms. Two hosted task arms on one single-slot endpoint run one
(arm, seed) at a time, so the server's prompt cache keeps each arm's tool block: it is evaluated again only
when the lane passes to the other arm, never at every turn (the loopback server's PrefixCache model)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from flows.evaluate import MAX_WORKERS
from tasks.core_records import RunContext
from tasks.run.prepare_run import prepare_run
from tasks.run.work_units import plan_units, run_unit
from tests.provider_server import PrefixCache, ProviderServer
from tests.selectors.providers.conftest import FAKE_KEY
from tests.surface.tiny_desk import close_ticket_script, desk_task, write_desk

N_TASKS = 6


def experiment(openai_url: str) -> str:
    return f"""\
name: lanes
taskset: ..
version: t1
seeds: [1]
declared: {{few_seeds: "a scheduling test"}}
batch_size: {N_TASKS}
defaults: {{agent: openai, model: gpt-4.1-mini-2025-04-14, prompt: default,
           options: {{base_url: "{openai_url}", concurrency: 1, retry_base_delay_s: 0.01}}}}
arms:
  - {{name: A, surface: plain}}
  - {{name: C, surface: prefixed}}
"""


@pytest.mark.parametrize("lanes", [True, False])
def test_two_task_arms_on_one_endpoint_do_not_alternate_turns(tmp_path, monkeypatch, lanes):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    tasks = [desk_task(f"close-{n}", f"Please close ticket T-1002 (request {n}).",
                       {"state": [{"path": "tickets.T-1002.status", "equals": "closed"}]}) for n in range(N_TASKS)]
    cache = PrefixCache(slots=1, per_token_s=0.0001)
    with ProviderServer(close_ticket_script, api_key=FAKE_KEY, prefix_cache=cache) as server:
        folder = write_desk(tmp_path, tasks, experiment=experiment(server.openai_url))
        prepared = prepare_run(folder / "experiments" / "four.yaml")
        units = plan_units(prepared)
        assert [u.label for u in units] == ["A/seed=1/batch=0", "C/seed=1/batch=0"]
        ctx = RunContext(f"lanes-{lanes}", "lanes", tmp_path / "wh", None, tmp_path / f"ledger-{lanes}.sqlite",
                         prefix_lanes=lanes)
        with ThreadPoolExecutor(MAX_WORKERS) as pool:  # both units at once, as the flow's thread runner runs them
            results = list(pool.map(lambda unit: run_unit(unit, ctx), units))
        requests = server.requests("openai")
    assert sum(r.n_rows for r in results) == 2 * N_TASKS and sum(r.n_ok for r in results) == 2 * N_TASKS
    assert len(requests) == 2 * N_TASKS * 2  # two turns a task
    arms = [seen.tools for seen in requests]  # the two surfaces offer different tool names
    assert len(set(arms)) == 2
    switches = sum(a != b for a, b in zip(arms, arms[1:]))
    if lanes:
        # one arm's turns, then the other's: the tool block is evaluated once per arm
        assert switches == 1, arms
        assert cache.tool_block_evaluations == 2
    else:  # without the lane the two arms' turns interleave (what today's main does for tasks)
        assert switches > 1 and cache.tool_block_evaluations > 2
