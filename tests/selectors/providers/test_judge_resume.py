"""Resuming a judged arm: it keeps the chat call's answer before its judge is asked, so a run killed
during the judge's calls repeats, on resume, only the judge: the server sees each chat request once."""

from __future__ import annotations

import json
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
from tests.provider_server import ProviderServer, Reply, Seen, text_reply, tool_call
from tests.selectors.providers.conftest import FAKE_KEY, MODELS, chat_options

SELECT_UNITS = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from tasks.core_records import RunContext
    from tasks.selection.select_batch import select_and_land
    from tests.selectors.providers.prefix_units import hosted_units

    options, tmp, run_id = json.loads(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    units = hosted_units("openai", sys.argv[4], options, n_requests=3, seeds=[1], batch_size=3)
    ctx = RunContext(run_id, "exp", tmp / "rows", tmp / "cache" / "selections.sqlite", tmp / f"{run_id}-ledger.sqlite")
    for unit in units:
        result = select_and_land(unit, ctx)
        print(f"rows={result.n_rows} hits={result.n_cache_hits}", flush=True)
""")


SECOND = "NW-1200001"
"""The second request's order number (tests/selectors/providers/prefix_units.py support_requests)."""


def script(seen: Seen) -> Reply:
    if seen.system.startswith("You grade"):
        slow = SECOND in seen.user_text and not seen.attempt  # the run is killed while this judge call is in flight
        return text_reply("right", delay_s=30.0 if slow else 0.0)
    return tool_call("lookup_order", {"order_id": "NW-1234567"})


def chat_requests(server: ProviderServer) -> Counter:
    return Counter(s.user_text for s in server.requests() if not s.system.startswith("You grade"))


@pytest.mark.slow  # two child processes
def test_a_run_killed_while_the_judge_votes_repeats_only_the_judge_on_resume(tmp_path):
    with ProviderServer(script, api_key=FAKE_KEY) as server:
        judge = {"model": MODELS["openai"], "selector": "openai", "base_url": server.openai_url, "votes": 3}
        options = chat_options(server, "openai", concurrency=1, judge=judge)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": FAKE_KEY}
        argv = [sys.executable, "-c", SELECT_UNITS, json.dumps(options), str(tmp_path)]
        # kill -9 while the second request's judge is being asked (its chat call is done)
        child = subprocess.Popen([*argv, "run-a", MODELS["openai"]], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None and not any(
                s.system.startswith("You grade") and SECOND in s.user_text for s in server.requests()):
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
        assert child.returncode == -9, child.stderr.read()[-2000:]
        before = chat_requests(server)
        assert sum(before.values()) == 2 and all(n == 1 for n in before.values()), before

        resumed = subprocess.run([*argv, "run-b", MODELS["openai"]], capture_output=True, text=True, timeout=300,
                                 cwd=ROOT, env=env)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        # the first request was finished (judged and cached); the second had only its chat call done
        assert "rows=3 hits=1" in resumed.stdout
        after = chat_requests(server)
        assert sum(after.values()) == 3 and all(n == 1 for n in after.values()), after  # no chat call twice
        judge_calls = [s for s in server.requests() if s.system.startswith("You grade")]
        # request 1's three votes before the kill, request 2's first vote in flight at the kill and its three
        # again on resume, request 3's three
        assert len(judge_calls) == 3 + 1 + 3 + 3
        con = sqlite3.connect(str(tmp_path / "cache" / "selections.sqlite"))
        try:
            assert con.execute("select count(*) from unjudged_selections").fetchone()[0] == 0  # dropped once judged
            assert con.execute("select count(*) from selections").fetchone()[0] == 3
        finally:
            con.close()
