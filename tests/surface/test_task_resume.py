"""A run killed with SIGKILL mid-task resumes without repeating a completed task: each outcome is cached the
moment its run ends, so only the task in flight at the kill is run again."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections import Counter

import pytest

from tests.factories import ROOT
from tests.provider_server import ProviderServer, Seen, text_reply, tool_call
from tests.selectors.providers.conftest import FAKE_KEY
from tests.surface.tiny_desk import desk_task, write_desk

N_TASKS = 12
RUN_UNITS = """
import sys
from pathlib import Path
from tasks.core_records import RunContext
from tasks.run.prepare_run import prepare_run
from tasks.run.work_units import plan_units, run_unit

prepared = prepare_run(sys.argv[1])
warehouse = Path(sys.argv[2])
ctx = RunContext(run_id=sys.argv[3], experiment=prepared.experiment.name, warehouse=warehouse,
                 cache_path=warehouse / "cache" / prepared.instrument.store.cache_file)
for unit in plan_units(prepared):
    print(run_unit(unit, ctx), flush=True)
"""


def closing_script(seen: Seen):
    return tool_call("close_ticket", {"ticket_id": "T-1002"}) if seen.turn == 0 else text_reply("Closed.")


def cached_task_ids(path) -> set[str]:
    if not path.exists():
        return set()
    con = sqlite3.connect(str(path), timeout=30)
    try:
        return {row[0] for row in con.execute("SELECT json_extract(outcome, '$.task_id') FROM task_outcomes")}
    except sqlite3.OperationalError:  # not created yet
        return set()
    finally:
        con.close()


@pytest.mark.slow  # two child processes and a loopback server with latency
def test_a_killed_run_resumes_without_repeating_a_completed_task(tmp_path):
    tasks = [desk_task(f"close-{n:02d}", f"Please close ticket T-1002 (request {n}).",
                       {"state": [{"path": "tickets.T-1002.status", "equals": "closed"}]}) for n in range(N_TASKS)]
    with ProviderServer(closing_script, api_key=FAKE_KEY, latency_s=0.15) as server:
        folder = write_desk(tmp_path, tasks, experiment=textwrap.dedent(f"""\
            name: resume
            taskset: ..
            version: t1
            seeds: [1]
            declared: {{few_seeds: "a resume test"}}
            batch_size: {N_TASKS}
            arms:
              - {{name: gpt, surface: plain, prompt: default, agent: openai, model: gpt-4.1-mini-2025-04-14,
                 options: {{base_url: "{server.openai_url}", concurrency: 1}}}}
            """))
        experiment, warehouse = folder / "experiments" / "four.yaml", tmp_path / "wh"
        cache = warehouse / "cache" / "task_outcomes.sqlite"
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": FAKE_KEY}
        child = subprocess.Popen([sys.executable, "-c", RUN_UNITS, str(experiment), str(warehouse), "run-a"], env=env,
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while len(cached_task_ids(cache)) < 3 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        done_before = cached_task_ids(cache)
        assert 3 <= len(done_before) < N_TASKS, child.stderr.read().decode()[-2000:]
        assert not list((warehouse / "task_runs").rglob("*.parquet"))  # the unit never landed

        resumed = subprocess.run([sys.executable, "-c", RUN_UNITS, str(experiment), str(warehouse), "run-b"], env=env,
                                 cwd=ROOT, capture_output=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
        assert f"n_rows={N_TASKS}" in resumed.stdout.decode() and f"n_cache_hits={len(done_before)}" in resumed.stdout.decode()
        first_turns = Counter(s.user_text for s in server.requests("openai") if s.turn == 0)
        for task in tasks:
            expected = 1 if task["id"] in done_before else (1, 2)  # the task in flight at the kill may run twice
            assert first_turns[task["request"]] in ((expected,) if isinstance(expected, int) else expected), task["id"]
        assert sum(first_turns[t["request"]] for t in tasks) <= N_TASKS + 1
        assert cached_task_ids(cache) == {t["id"] for t in tasks}
