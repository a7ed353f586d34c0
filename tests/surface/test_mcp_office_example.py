"""The bundled MCP example (tasksets/mcp_office): its files are what its generator writes; every task passes the
checks on both surfaces; every task is solvable and none is vacuous, on the REAL reference servers: the competent
run written next to each task (the generator's ORACLES) succeeds on both surfaces, while doing nothing fails every
task and the plausible wrong runs (WRONG: one or more per slice) fail; the four-arm experiment resolves with one
change per comparison; the hosted agents do its tasks through the loopback server."""

from __future__ import annotations

import importlib.util
import time
from collections import Counter
from types import ModuleType

import pytest

from tasks.run.prepare_run import prepare_run
from tasks.selectors.providers.call_budget import RunLedger
from tasks.surface.agent_loop import run_task
from tasks.surface.chat_agent import ChatAgent
from tasks.surface.load_surface import ResolvedSurface, load_surface
from tasks.surface.load_tasks import TaskVersion, frozen_differs, load_task_version
from tasks.surface.mcp_backend import close_pools, pool_for
from tasks.surface.task_checks import check_tasks
from tests.factories import ROOT
from tests.provider_server import text_reply, tool_call
from tests.selectors.providers.conftest import FAKE_KEY, FAST_RETRIES, MODELS, NOWHERE, ServerFactory
from tests.surface.scripted_agent import ScriptedAgent, calls, say
from tests.surface.test_agent_providers import by_turn

FOLDER = ROOT / "tasksets" / "mcp_office"
SURFACES = ("office", "office_focused")


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_mcp_office_tasks", FOLDER / "generate_tasks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATOR = _generator()


@pytest.fixture(scope="module")
def version() -> TaskVersion:
    return load_task_version(FOLDER, "t1")


@pytest.fixture(scope="module")
def surfaces():
    """Both surfaces, one warm instance each for the whole module (every task resets it to its fixtures)."""
    yield {name: load_surface(FOLDER, name) for name in SURFACES}
    close_pools()


def play(surface: ResolvedSurface, version: TaskVersion, task_id: str, run: dict):
    """A scripted agent making ``run``'s calls (one a turn, by backend name: both surfaces offer them unprefixed),
    then replying its text, on the real servers."""
    task = next(t for t in version.tasks if t.id == task_id)
    turns = [calls((name, arguments)) for name, arguments in run["calls"]] + [say(run["reply"])]
    agent = ScriptedAgent(lambda _task: list(turns))
    return run_task(agent, surface, task, version.fixtures(task), surface.specs, "prompt")


def test_the_files_are_what_the_generator_writes():
    for relative, text in GENERATOR.build().items():
        assert (FOLDER / relative).read_text() == text, f"{relative}: run tasksets/mcp_office/generate_tasks.py"
    assert frozen_differs(FOLDER, "t1", GENERATOR.build(), ["office"]) is None


@pytest.mark.slow  # starts the real servers
def test_three_slices_of_tasks_pass_every_check_on_both_surfaces(version, surfaces):
    assert check_tasks(version, surfaces.values()).n_tasks >= 36
    assert version.manifest.counts_by_slice == {"crm": 18, "cross": 16, "files": 17}
    assert set(GENERATOR.ORACLES) == {t.id for t in version.tasks}
    assert {t.slice for t in version.tasks if t.id in GENERATOR.WRONG} == {"crm", "files", "cross"}
    office, focused = surfaces["office"], surfaces["office_focused"]
    assert len(office.tools) == 23 and len(focused.tools) == 17
    assert office.backend_tools.keys() == focused.backend_tools.keys()
    offered = {t.spec.name for t in focused.tools}
    assert {"delete_entities", "delete_relations", "read_file"}.isdisjoint(offered)
    for task in version.tasks:  # every tool an assertion names, and every tool an oracle calls, is offered on both
        named = task.assertion.tools_named | {name for name, _ in GENERATOR.ORACLES[task.id]["calls"]}
        assert named <= offered, (task.id, named - offered)
    assert all(t.budget.max_calls >= len(GENERATOR.ORACLES[t.id]["calls"]) for t in version.tasks)


@pytest.mark.slow  # the real servers, every task three ways on two surfaces
def test_every_task_is_solvable_and_none_is_vacuous_on_the_real_servers(version, surfaces):
    started = time.perf_counter()
    failures = []
    irreversible = Counter()
    for surface in surfaces.values():
        for task in version.tasks:
            done = play(surface, version, task.id, GENERATOR.ORACLES[task.id])
            broken = [c.tool for c in done.calls if c.error or not c.valid]
            if not done.success or broken or done.stop_reason != "model_stop":
                failures.append((surface.name, task.id, "oracle", done.failed_assertions, broken))
            irreversible[surface.name] += sum(c.irreversible for c in done.calls)
            idle = play(surface, version, task.id, {"calls": [], "reply": "Done."})
            if idle.success:
                failures.append((surface.name, task.id, "doing nothing succeeds", [], []))
            if task.id in GENERATOR.WRONG:
                wrong = play(surface, version, task.id, GENERATOR.WRONG[task.id])
                if wrong.success:
                    failures.append((surface.name, task.id, "the wrong run succeeds", [], []))
    assert failures == []
    for surface in surfaces.values():
        assert pool_for(surface.backend).starts == 1  # one warm instance served every task of the surface
    # the competent runs need irreversible actions (an edit, a new file, a stale fact replaced) in some tasks only:
    # the number criteria.yaml's cap is written against
    assert irreversible["office"] == irreversible["office_focused"] == 19
    assert time.perf_counter() - started < 60


@pytest.mark.slow  # resolving the surfaces starts the servers
def test_the_four_arm_experiment_resolves_with_one_change_per_comparison(monkeypatch):
    prepared = prepare_run(FOLDER / "experiments" / "four_arms.yaml")
    changed = {(c.baseline, c.arm): c.changed for c in prepared.experiment.comparisons}
    assert changed[("A-plain", "B-careful")] == ("prompt",)
    assert changed[("A-plain", "C-focused")] == ("surface",)
    assert changed[("B-careful", "D-both")] == ("surface",) and changed[("C-focused", "D-both")] == ("prompt",)
    assert changed[("A-plain", "D-both")] == ("surface", "prompt")
    assert prepared.criteria is not None and len(prepared.criteria[1].gates) == 5
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # resolved, never called
    hosted = prepare_run(FOLDER / "experiments" / "hosted.yaml")
    assert [a.name for a in hosted.experiment.arms] == [a.name for a in prepared.experiment.arms]
    assert {a.agent for a in hosted.experiment.arms} == {"openai"}
    close_pools()


@pytest.mark.slow  # the real servers
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("task_id", ["cross-paid-0", "cross-onboard-0"])
def test_a_hosted_agent_does_a_bundled_cross_task_through_the_loopback_server(version, surfaces, monkeypatch,
                                                                              kind, task_id):
    """The hosted agents of experiments/hosted.yaml (the official SDKs, over HTTP to the loopback server, which
    answers with the task's competent run) on the focused surface with the careful prompt: the servers' answers
    travel back to the model and the end state the probes read is the one the model's calls made."""
    for name, value in (("OPENAI_API_KEY", FAKE_KEY), ("ANTHROPIC_API_KEY", FAKE_KEY),
                        ("OPENAI_BASE_URL", f"{NOWHERE}/v1"), ("ANTHROPIC_BASE_URL", NOWHERE)):
        monkeypatch.setenv(name, value)
    run = GENERATOR.ORACLES[task_id]
    factory = ServerFactory()
    try:
        server = factory(by_turn(*[tool_call(name, arguments) for name, arguments in run["calls"]],
                                 text_reply(run["reply"])))
        task = next(t for t in version.tasks if t.id == task_id)
        surface = surfaces["office_focused"]
        url = server.openai_url if kind == "openai" else server.anthropic_url
        agent = ChatAgent(kind, MODELS[kind], {"base_url": url, **FAST_RETRIES}, RunLedger(None, "test-run"))
        prompt = (FOLDER / "prompts" / "careful.md").read_text()
        outcome = run_task(agent, surface, task, version.fixtures(task), surface.specs, prompt)
        assert outcome.success and outcome.stop_reason == "model_stop", outcome.failed_assertions
        assert [c.tool for c in outcome.calls] == [name for name, _ in run["calls"]]
        assert {c.server for c in outcome.calls} == {"memory", "files"}
        seen = server.requests(kind)
        assert len(seen) == len(run["calls"]) + 1
        offered = {t["function"]["name"] if kind == "openai" else t["name"] for t in seen[0].body["tools"]}
        assert len(offered) == 17 and "delete_entities" not in offered
        assert all(not is_error for request in seen[1:] for _, is_error in request.tool_results)
    finally:
        for server in factory.servers:
            server.__exit__(None, None, None)
