"""An unpinned self-hosted model answered from the cache is said and recorded, for both instruments, through the
real flow and the loopback server: the first run fills the cache and says nothing; the server's model then
changes, the second run is served wholly from the cache, warns naming the arm, its count and --no-cache, flags
the arm's record and notes it in the report; a pinned model on the same server is never flagged."""

from __future__ import annotations

import textwrap

import duckdb
import pytest

from flows.cli import EXIT_OK, main
from tasks.core_records import UnitResult
from tasks.run.unpinned_cache import cache_use
from tasks.selectors.providers.pinned_models import arm_unpinned
from tests.factories.catalogues import support_tools
from tests.provider_server import ProviderServer, Seen, oracle, text_reply
from tests.selectors.providers.conftest import FAKE_KEY
from tests.selectors.providers.example_arguments import example_arguments
from tests.selectors.providers.test_provider_flow import trimmed_support
from tests.surface.tiny_desk import close_ticket_script, write_desk

PINNED = "gpt-4.1-mini-2025-04-14"
LOCAL = "qwen2.5:7b"
UNPINNED_OPTIONS = "unpinned_reason: local ollama tag, prices: {input: 0, output: 0}"


class Switchable:
    """A server script that can be swapped between runs: the server's model 'changes' under the same id."""

    def __init__(self, script):
        self.script = script

    def __call__(self, seen: Seen):
        return self.script(seen)


def run_twice(command: list[str], server: ProviderServer, server_script: Switchable, changed, capsys):
    """Run, change the server's behaviour, run again; each run's (exit code, stdout, stderr, requests sent)."""
    first = main(command)
    one, sent = capsys.readouterr(), len(server.requests())
    assert sent > 0, (first, one.out[-2000:], one.err[-3000:])
    server_script.script = changed
    second = main(command)
    two = capsys.readouterr()
    return (first, one.out, one.err, sent), (second, two.out, two.err, len(server.requests()) - sent)


def arm_flags(warehouse, table: str) -> dict[str, dict[str, tuple]]:
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    try:
        rows = con.execute(f"SELECT run_id, arm, unpinned_reason, n_items, n_from_cache, unpinned_from_cache "
                           f"FROM {table} ORDER BY run_id, rung").fetchall()
    finally:
        con.close()
    runs: dict[str, dict[str, tuple]] = {}
    for run_id, arm, *rest in rows:
        runs.setdefault(run_id, {})[arm] = tuple(rest)
    return runs


def test_a_task_run_of_an_unpinned_agent_served_from_the_cache_warns_and_is_flagged(prefect_harness, tmp_path,
                                                                                      monkeypatch, capsys, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    script = Switchable(close_ticket_script)
    with ProviderServer(script, api_key=FAKE_KEY) as server:
        experiment = textwrap.dedent(f"""\
            name: unpinned
            taskset: ..
            version: t1
            seeds: [1, 2]
            declared: {{few_seeds: "a cache test"}}
            defaults: {{agent: openai, prompt: default, surface: plain,
                       options: {{base_url: "{server.openai_url}", concurrency: 4, retry_base_delay_s: 0.01}}}}
            arms:
              - {{name: local, model: "{LOCAL}", options: {{{UNPINNED_OPTIONS}}}}}
              - {{name: hosted, model: {PINNED}}}
            comparisons:
              - {{from: hosted, to: local, declare: [agent]}}
            """)
        folder = write_desk(tmp_path, experiment=experiment)
        warehouse = tmp_path / "wh"
        command = ["tasks", "run", str(folder / "experiments" / "four.yaml"), "--warehouse", str(warehouse)]
        first, second = run_twice(command, server, script, lambda seen: text_reply("I cannot do that."), capsys)
        code = main([*command, "--no-cache"])  # asks the server again
        fresh = capsys.readouterr()
    assert first[0] == EXIT_OK and second[0] == EXIT_OK and second[3] == 0  # the second run: no model call
    n = 2 * 4  # seeds x tasks, per arm
    assert "from the cache" not in first[2] and "Note: arm" not in first[1]
    warning = (f"arm local: model '{LOCAL}' is not pinned (unpinned_reason: local ollama tag) and {n} of its {n} "
               "task runs came from the cache: they may predate a change of the server's model; rerun with "
               "--no-cache to ask the server again (it neither reads nor fills the cache), or state the weights in "
               "model_revision, which is part of the cache key")
    assert f"WARNING: {warning}" in " ".join(second[2].split())  # folded to the terminal's width
    assert "arm hosted" not in second[2]  # a pinned model on the same server: not flagged
    assert "arm local: model 'qwen2.5:7b' is not pinned (unpinned_reason: local ollama tag): results an earlier " \
           "run cached for it are used as they are" in " ".join((second[2] + caplog.text).split()), second[2]
    # said at the start, in the flow's log (on stderr through Prefect's console handler when run from a shell;
    # inside the suite that handler may hold an earlier test's stream, so the log records are read too)
    assert f"Note: {warning}" in " ".join(second[1].split())  # the report, under the arms
    assert f"{n * 2} task runs" in second[1] and f"{n * 2} from cache" in " ".join(second[1].split())
    runs = arm_flags(warehouse, "task_arms")
    (first_run, second_run, third_run) = (runs[r] for r in sorted(runs))
    assert first_run == {"local": ("unpinned_reason: local ollama tag", n, 0, False), "hosted": (None, n, 0, False)}
    assert second_run == {"local": ("unpinned_reason: local ollama tag", n, n, True), "hosted": (None, n, n, False)}
    # the cached outcomes are the first server's: every close-1 run succeeded, though the server now refuses
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    assert con.execute("SELECT bool_and(success) FROM task_runs WHERE task_id = 'close-1' AND run_id = ?",
                       [sorted(runs)[1]]).fetchall()[0][0]
    con.close()
    # --no-cache asks the server again: nothing from the cache, nothing flagged, and the new behaviour shows
    # --no-cache: nothing from the cache, nothing flagged, and the server's new behaviour shows
    assert code == EXIT_OK and "from the cache" not in fresh.err and "Note: arm" not in fresh.out
    assert third_run["local"] == ("unpinned_reason: local ollama tag", n, 0, False)
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    assert not con.execute("SELECT bool_or(success) FROM task_runs WHERE task_id = 'close-1' AND run_id = ?",
                           [max(runs)]).fetchall()[0][0]
    con.close()


def test_a_selection_run_of_an_unpinned_model_served_from_the_cache_warns_and_is_flagged(
        prefect_harness, support_copy, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    expected = trimmed_support(support_copy)
    arguments = {t.name: example_arguments(t.parameters) for t in support_tools()}
    script = Switchable(oracle(expected, arguments))
    with ProviderServer(script, api_key=FAKE_KEY) as server:
        options = f'base_url: "{server.openai_url}", retry_base_delay_s: 0.01, concurrency: 2'
        experiment = support_copy / "experiments" / "unpinned.yaml"
        experiment.write_text(textwrap.dedent(f"""\
            name: unpinned
            taskset: ..
            version: v1
            seeds: [1, 2, 3]
            defaults: {{catalogue: giftcards, prompt: default, selector: openai}}
            arms:
              - {{name: local, model: "{LOCAL}", options: {{{options}, {UNPINNED_OPTIONS}}}}}
              - {{name: hosted, model: {PINNED}, options: {{{options}}}}}
            comparisons:
              - {{from: hosted, to: local, declare: [selector]}}
            """))
        warehouse = tmp_path / "wh"
        command = ["run", str(experiment), "--warehouse", str(warehouse)]
        first, second = run_twice(command, server, script, lambda seen: text_reply("no tool today"), capsys)
    assert first[0] == EXIT_OK and second[0] == EXIT_OK and second[3] == 0
    n = 3 * len(expected)
    assert "from the cache" not in first[2]
    warning = (f"arm local: model '{LOCAL}' is not pinned (unpinned_reason: local ollama tag) and {n} of its {n} "
               "rows came from the cache: they may predate a change of the server's model; rerun with --no-cache "
               "to ask the server again")
    assert f"WARNING: {warning}" in " ".join(second[2].split()) and "arm hosted: model" not in second[2]
    assert f"Note: {warning}" in " ".join(second[1].split())
    runs = arm_flags(warehouse, "arms")
    (first_run, second_run) = (runs[r] for r in sorted(runs))
    assert first_run == {"local": ("unpinned_reason: local ollama tag", n, 0, False), "hosted": (None, n, 0, False)}
    assert second_run == {"local": ("unpinned_reason: local ollama tag", n, n, True), "hosted": (None, n, n, False)}


class _Arm:
    def __init__(self, name, provider, model_id, options):
        self.name, self.provider, self.model_id, self.options = name, provider, model_id, options


class _Unit:
    def __init__(self, arm):
        self.arm = arm


@pytest.mark.parametrize("provider, model, options, unpinned", [
    ("openai", LOCAL, {"unpinned_reason": "local tag"}, "unpinned_reason: local tag"),
    ("openai", LOCAL, {"model_revision": "sha256:ab12"}, None),      # the weights named: pinned
    ("openai", PINNED, {"base_url": "http://127.0.0.1:8080/v1"}, None),  # a dated snapshot id
    ("anthropic", "claude-sonnet-4-6", {}, None),
    ("baseline", "tooleval-baseline-bm25-1", {}, None),               # offline: its code is its pin
    (None, "lexical-1", {}, None),
])
def test_which_arms_are_unpinned(provider, model, options, unpinned):
    assert arm_unpinned(_Arm("a", provider if provider in ("openai", "anthropic") else None, model, options)) \
        == unpinned


def test_cache_use_counts_each_arms_units_and_flags_only_an_unpinned_one():
    local, hosted = _Arm("local", "openai", LOCAL, {"unpinned_reason": "x"}), _Arm("hosted", "openai", PINNED, {})
    units = [_Unit(local), _Unit(local), _Unit(hosted)]
    results = [UnitResult("l0", 5, 5, 5, 0), UnitResult("l1", 5, 5, 0, 0), UnitResult("h0", 4, 4, 4, 0)]
    used = cache_use([local, hosted], units, results, arm_unpinned)
    assert (used["local"].n_items, used["local"].n_from_cache, used["local"].flagged) == (10, 5, True)
    assert (used["hosted"].n_items, used["hosted"].n_from_cache, used["hosted"].flagged) == (4, 4, False)
    assert used["local"].record_fields() == {"unpinned_reason": "unpinned_reason: x", "n_items": 10,
                                             "n_from_cache": 5, "unpinned_from_cache": True}
