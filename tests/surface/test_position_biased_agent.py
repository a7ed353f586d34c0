"""The baseline agent's ``position_bias`` (a simulation of position sensitivity): its first call moves to the
first-offered tool exactly when the documented draw falls under ``bias (k - 1) / (n - 1)``, the same in a
rerun, and never without the option."""

from __future__ import annotations

import pytest

from tasks.run.permute_tools import permute_tools
from tasks.selectors.routers.position_biased import move_probability, order_draw
from tasks.surface.agent_loop import run_task
from tasks.surface.arms import agent_problems
from tasks.surface.baseline_agent import BaselineAgent
from tasks.surface.load_surface import load_surface
from tasks.surface.load_tasks import load_task_version
from tests.surface.tiny_desk import write_desk

SEEDS = range(12)


@pytest.fixture
def desk(tmp_path):
    folder = write_desk(tmp_path)
    return load_task_version(folder, "t1"), load_surface(folder, "plain")


def first_calls(desk, bias: float) -> dict[tuple[str, int], str | None]:
    version, surface = desk
    agent = BaselineAgent("tooleval-baseline-bm25-1", {"position_bias": bias})
    out = {}
    for task in version.tasks:
        for seed in SEEDS:
            tools = permute_tools(surface.specs, seed)
            outcome = run_task(agent, surface, task, version.fixtures(task), tools, "prompt")
            out[task.id, seed] = outcome.calls[0].name if outcome.calls else None
    return out


def test_the_first_call_moves_to_the_first_offered_tool_as_documented(desk):
    version, surface = desk
    plain, biased = first_calls(desk, 0.0), first_calls(desk, 0.9)
    assert first_calls(desk, 0.9) == biased  # a rerun agrees
    tasks = {task.id: task for task in version.tasks}
    moved = 0
    for (task_id, seed), unbiased in plain.items():
        if unbiased is None:
            continue
        names = [tool.name for tool in permute_tools(surface.specs, seed)]
        draw = order_draw(tasks[task_id].model_dump_json(by_alias=True), names)
        should_move = draw < move_probability(names.index(unbiased) + 1, len(names), 0.9)
        assert biased[task_id, seed] == (names[0] if should_move else unbiased), (task_id, seed)
        moved += should_move and names[0] != unbiased
    assert moved > 0  # the first call depends on the seed's tool order


def test_position_bias_is_checked_before_anything_runs():
    problems, _ = agent_problems("baseline", "m", {"position_bias": 2})
    assert problems and "position_bias" in problems[0][1]
    assert agent_problems("baseline", "m", {"position_bias": 0.3})[0] == []
