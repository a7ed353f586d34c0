"""A toolkit tool that never returns used to hang `tooleval tasks run` with no output, even
with the task's ``max_wall_s``. A call is now waited for at most the surface's ``call_timeout_s`` and at most
what is left of the task's wall budget: the call becomes an error call, the run stops with its reason, the
session is discarded, and the other tasks run and land."""

from __future__ import annotations

import json
import textwrap
import threading
import time

import duckdb
import pytest

from tasks.surface import hung_tools
from tasks.surface.agent_loop import run_task
from tasks.surface.load_surface import load_surface
from tasks.surface.load_tasks import freeze_task_version, load_task_version
from tasks.surface.surface_session import DEFAULT_CALL_TIMEOUT_S
from tests.surface.plain_run import run_plain
from tests.surface.scripted_agent import ScriptedAgent, calls, say
from tests.surface.tiny_desk import DEFAULT_TASKS, desk_task, write_desk

SPIN = '''    @tool
    def count_stars(self) -> dict:
        """Count the stars in the sky, every one of them."""
        stars = 0
        while stars >= 0:  # never returns: a loop in Python code
            stars += 1
        return {"stars": stars}

'''

STARS = desk_task("stars-1", "Count the stars in the sky.", {"reply": {"contains": "stars"}}, intent="stars")


def hung_desk(tmp_path, timeout: float | None = 1.0, tasks=None, spin: str = SPIN):
    """The tiny desk with a tool that never returns (``spin``); the tools given up so far are forgotten."""
    hung_tools.forget()
    folder = write_desk(tmp_path, freeze=False, tasks=tasks if tasks is not None else [*DEFAULT_TASKS, STARS])
    backend = folder / "backend" / "desk.py"
    backend.write_text(backend.read_text().replace("    @tool\n    def get_ticket", spin + "    @tool\n    def get_ticket", 1))
    if timeout is not None:
        plain = folder / "surfaces" / "plain.yaml"
        plain.write_text(plain.read_text() + f"call_timeout_s: {timeout}\n")
    freeze_task_version(folder, "t1", ["tickets", "questions"])
    return folder


def hung_experiment(folder):
    """A one-arm, one-seed experiment of the baseline agent over the hung desk's plain surface."""
    experiment = folder / "experiments" / "one.yaml"
    experiment.write_text(textwrap.dedent("""\
        name: desk-hung
        taskset: ..
        version: t1
        seeds: [1]
        declared: {few_seeds: a hung tool}
        defaults: {agent: baseline}
        arms:
          - {name: A, surface: plain, prompt: default}
        """))
    return experiment


def play(folder, task_id, turns, **budget):
    version, surface = load_task_version(folder, "t1"), load_surface(folder, "plain")
    task = next(t for t in version.tasks if t.id == task_id)
    if budget:
        task = task.model_copy(update={"budget": task.budget.model_copy(update=budget)})
    started = time.perf_counter()
    outcome = run_task(ScriptedAgent(lambda _: list(turns)), surface, task, version.fixtures(task), surface.specs, "p")
    return outcome, time.perf_counter() - started


def no_call_threads(within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(t.name.startswith("tooleval-call-") and t.is_alive() for t in threading.enumerate()):
            return True
        time.sleep(0.05)
    return False


def test_a_call_past_the_surface_timeout_is_an_error_call_and_a_surface_error(tmp_path):
    folder = hung_desk(tmp_path, timeout=0.5)
    outcome, took = play(folder, "stars-1", [calls(("get_ticket", '{"ticket_id": "T-1001"}')),
                                             calls(("count_stars", "{}")), say("Many stars.")])
    assert took < 5
    assert outcome.stop_reason == "surface_error" and not outcome.success
    assert "count_stars' did not answer within the surface's call_timeout_s (0.5 s)" in outcome.detail
    assert [(c.name, c.executed, c.error) for c in outcome.calls] == [("get_ticket", True, False),
                                                                      ("count_stars", True, True)]
    assert outcome.failed_assertions[0].startswith("not scored: the surface failed")
    assert no_call_threads()  # the looping thread was asked to stop, and did


def test_the_wall_budget_cuts_a_call_that_outlives_it(tmp_path):
    folder = hung_desk(tmp_path, timeout=None)  # the surface's default call timeout (30 s) is not what ends it
    assert load_surface(folder, "plain").backend.call_timeout_s == DEFAULT_CALL_TIMEOUT_S
    outcome, took = play(folder, "stars-1", [calls(("count_stars", "{}")), say("Many stars.")], max_wall_s=1)
    assert 0.9 < took < 5
    assert outcome.stop_reason == "max_wall" and not outcome.success
    assert "still running when the task's wall budget (max_wall_s) ran out" in outcome.detail
    assert outcome.calls[0].error and outcome.failed_assertions[0].startswith("not scored: a call was cut")
    assert no_call_threads()


def test_calls_after_the_wall_budget_are_skipped_not_executed(tmp_path):
    folder = hung_desk(tmp_path)
    slow = [calls(*[("get_ticket", '{"ticket_id": "T-1001"}')] * 2)]
    outcome, _ = play(folder, "stars-1", slow, max_wall_s=1e-9)
    assert outcome.stop_reason == "max_wall" and outcome.n_turns == 0  # checked before the first turn


def test_a_timeout_on_an_mcp_surface_belongs_under_mcp(tmp_path):
    from pydantic import ValidationError

    from schemas.surface.surface_file import SurfaceFile
    with pytest.raises(ValidationError, match="mcp.call_timeout_s"):
        SurfaceFile.model_validate({"name": "m", "mcp": {"servers": {"s": {"command": "node", "args": ["x.js"]}}},
                                    "call_timeout_s": 5})


def test_a_run_with_a_hung_tool_ends_and_every_task_lands(tmp_path):
    experiment = hung_experiment(hung_desk(tmp_path, timeout=0.5))
    started = time.perf_counter()
    run_plain(experiment, tmp_path / "wh", run_id="hung-1")
    assert time.perf_counter() - started < 60
    con = duckdb.connect(str(tmp_path / "wh" / "tooleval.duckdb"), read_only=True)
    rows = dict(con.execute("SELECT task_id, stop_reason FROM task_runs WHERE run_id = ?", ["hung-1"]).fetchall())
    stars = con.execute("SELECT name, error, error_detail FROM task_calls WHERE run_id = ? AND task_id = 'stars-1'",
                        ["hung-1"]).fetchall()
    con.close()
    assert set(rows) == {t["id"] for t in DEFAULT_TASKS} | {"stars-1"}
    assert rows["stars-1"] == "surface_error" and "surface_error" not in {v for k, v in rows.items() if k != "stars-1"}
    assert stars[-1][0] == "count_stars" and stars[-1][1] and "call_timeout_s" in stars[-1][2]
    assert no_call_threads()
