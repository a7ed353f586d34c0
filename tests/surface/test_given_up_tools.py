"""A toolkit tool that never returns, and cannot be stopped (it loops in C, where the exception that ends
an abandoned call never lands): after GIVE_UP_AFTER timeouts it is not called again for the rest of the run, so a run of
two dozen tasks over it ends in bounded time with those calls counted as error calls, and the threads it
left do not keep the process alive."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import duckdb
import pytest

from tasks.surface import hung_tools
from tasks.surface.hung_tools import GIVE_UP_AFTER
from tests.factories import ROOT

N_TASKS = 24
TIMEOUT_S = 0.5

RUN = """
import json, sys, threading, time
from pathlib import Path
from tests.surface.plain_run import run_plain
from tests.surface.test_hung_calls import hung_desk, hung_experiment
from tests.surface.test_given_up_tools import STUBBORN, star_tasks

root = Path(sys.argv[1])
folder = hung_desk(root, timeout=float(sys.argv[2]), tasks=star_tasks(int(sys.argv[3])), spin=STUBBORN)
started = time.perf_counter()
run_plain(hung_experiment(folder), root / "wh", run_id="stars-1")
stuck = sum(t.name.startswith("tooleval-call-") and t.is_alive() for t in threading.enumerate())
print(json.dumps({"run_s": time.perf_counter() - started, "stuck_threads": stuck}), flush=True)
"""

STUBBORN = '''    @tool
    def count_stars(self) -> dict:
        """Count the stars in the sky, every one of them."""
        while True:  # never returns: blocked in C, where the exception that ends an abandoned call never lands
            __import__("time").sleep(3600)

'''


def star_tasks(n: int) -> list[dict]:
    from tests.surface.tiny_desk import desk_task

    return [desk_task(f"stars-{i:02d}", "Count the stars in the sky.", {"reply": {"contains": "stars"}},
                      intent="stars") for i in range(1, n + 1)]


@pytest.fixture(autouse=True)
def forget_hung_tools():
    hung_tools.forget()
    yield
    hung_tools.forget()


def test_a_tool_that_never_returns_is_given_up_and_two_dozen_tasks_end_in_bounded_time(tmp_path):
    # in a process of its own: the threads the tool keeps spinning must not slow the test process, and the
    # process must exit although they never end
    done = subprocess.run([sys.executable, "-c", RUN, str(tmp_path), str(TIMEOUT_S), str(N_TASKS)], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["stuck_threads"] == GIVE_UP_AFTER  # one a timeout, none for a call given up
    assert said["run_s"] < 120
    con = duckdb.connect(str(tmp_path / "wh" / "tooleval.duckdb"), read_only=True)
    runs = con.execute("SELECT stop_reason, count(*), sum(wall_ms) FROM task_runs WHERE run_id = 'stars-1' "
                       "GROUP BY 1").fetchall()
    calls = con.execute("SELECT error, executed, error_detail FROM task_calls WHERE run_id = 'stars-1' "
                        "AND name = 'count_stars' ORDER BY task_id").fetchall()
    totals = con.execute("SELECT errors, calls FROM task_call_totals WHERE run_id = 'stars-1'").fetchall()
    con.close()
    assert [r[:2] for r in runs] == [("surface_error", N_TASKS)]  # every task landed, none carried out
    # the tasks waited on GIVE_UP_AFTER timeouts, not on one each
    assert GIVE_UP_AFTER * TIMEOUT_S * 1000 <= runs[0][2] < (GIVE_UP_AFTER + 2) * TIMEOUT_S * 1000
    assert len(calls) == N_TASKS and all(error for error, _, _ in calls)
    timed_out = [d for _, _, d in calls if "did not answer within the surface's call_timeout_s" in d]
    given_up = [d for _, _, d in calls if "given up for the rest of the run" in d]
    assert len(timed_out) == GIVE_UP_AFTER and len(given_up) == N_TASKS - GIVE_UP_AFTER
    assert f"{GIVE_UP_AFTER} times in this run" in given_up[0]
    assert totals == [(N_TASKS, N_TASKS)]  # each an error call in the arm's totals


def test_a_timeout_by_the_task_s_wall_budget_does_not_count_toward_giving_up(tmp_path):
    from tests.surface.test_hung_calls import STARS, hung_desk, play
    from tests.surface.scripted_agent import calls, say

    folder = hung_desk(tmp_path, timeout=None, tasks=[STARS])
    for _ in range(GIVE_UP_AFTER + 1):  # each cut by max_wall_s, none by the tool's own timeout
        outcome, _ = play(folder, "stars-1", [calls(("count_stars", "{}")), say("Many stars.")], max_wall_s=0.3)
        assert outcome.stop_reason == "max_wall" and "given up" not in outcome.detail


def test_a_new_run_calls_a_given_up_tool_again(tmp_path):
    from tests.surface.test_hung_calls import STARS, hung_desk, play
    from tests.surface.scripted_agent import calls, say

    folder = hung_desk(tmp_path, timeout=0.2, tasks=[STARS])
    turns = [calls(("count_stars", "{}")), say("Many stars.")]
    details = [play(folder, "stars-1", turns)[0].detail for _ in range(GIVE_UP_AFTER + 1)]
    assert all("call_timeout_s (0.2 s)" in d for d in details[:GIVE_UP_AFTER])
    assert "given up" in details[GIVE_UP_AFTER]
    hung_tools.forget()  # what the evaluate flow does when a run's units are done (the instrument's units_done)
    assert "call_timeout_s (0.2 s)" in play(folder, "stars-1", turns)[0].detail


def test_the_instrument_forgets_given_up_tools_when_a_run_s_units_are_done():
    from tasks.surface.instrument import INSTRUMENT

    hung_tools.timed_out("plain", "/count_stars")
    INSTRUMENT.units_done()
    hung_tools.check_not_given_up("plain", "/count_stars", "count_stars")  # does not raise
    assert hung_tools._timeouts == {}


def test_the_page_on_hung_calls_states_the_rule_with_its_number():
    page = " ".join((ROOT / "docs" / "surface" / "writing-a-surface.md").read_text().split())
    assert f"`call_timeout_s` {GIVE_UP_AFTER} timeouts in a run (`GIVE_UP_AFTER`" in page


def test_an_mcp_tool_that_hangs_is_given_up_the_same_way(tmp_path):
    import signal

    from tasks.surface.load_surface import load_surface
    from tasks.surface.mcp_backend import close_pools
    from tests.surface.mcp_office import MEMORY_JS, server_processes, write_office
    from tests.surface.scripted_agent import calls, say
    from tests.surface.test_mcp_surface import run

    surface = load_surface(write_office(tmp_path, call_timeout_s=1.0), "memory")
    try:
        for _ in range(GIVE_UP_AFTER):
            assert run(surface, [calls(("read_graph", {})), say("warm")]).stop_reason == "model_stop"
            for process in server_processes(MEMORY_JS):
                process.send_signal(signal.SIGSTOP)  # the next call hangs; the instance is killed after it
            hung = run(surface, [calls(("read_graph", {})), say("x")])
            assert hung.stop_reason == "surface_error" and "hung" in hung.detail
        given_up = run(surface, [calls(("read_graph", {})), say("x")])  # not called: no timeout waited for
        assert given_up.stop_reason == "surface_error" and "given up for the rest of the run" in given_up.detail
        assert given_up.calls[0].error
        other = run(surface, [calls(("search_nodes", {"query": "Acme"})), say("x")])  # its other tools still answer
        assert other.stop_reason == "model_stop" and not other.calls[0].error
    finally:
        close_pools()
