"""A surface transform (prefix, rename) keeps a request's label. A catalogue written by
`tooleval tasks catalogue` from a transformed surface says which label each offered name stands for
(``offered_as``), so a request labelled ``close_ticket`` expects ``desk.close_ticket`` of an arm offering it;
the surface instrument's first-call cross-tab spells a tool-named intent as the arm offers it; and an arm whose
catalogue offers the tool of no label is refused before anything runs, naming the arm and the catalogue."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import duckdb
import pytest

from flows.cli import main
from tasks.taskset.load_taskset import freeze_version, load_catalogue
from tests.surface.tiny_desk import desk_task, write_desk

REQUESTS = [
    ("r1", "Please close ticket T-1002, it is done.", "close_ticket"),
    ("r2", "Escalate T-1001: page the on-call engineer.", "escalate_ticket"),
    ("r3", "Read ticket T-1003 by its id.", "get_ticket"),
    ("r4", "List the open tickets of a customer, two per page.", "list_tickets"),
    ("r5", "Summarise ticket T-1001 for me.", "broken_report"),
    ("r6", "Tell me a joke about penguins.", "none"),
]

WEIGHTS = {"close_ticket": 0.4, "get_ticket": 0.3, "list_tickets": 0.2, "escalate_ticket": 0.1}
"""Production weights, named as the version labels the tools."""

RENAMED = "name: renamed\ntoolkit: desk:Desk\ntransform:\n  rename: {close_ticket: resolve_ticket}\n"


def selection_desk(root: Path, catalogues: dict[str, str]) -> Path:
    """The tiny desk with a selection version v1 labelled with the backend's tool names, catalogue NAME written
    by `tooleval tasks catalogue` from each surface, and an experiment: one order-blind, name-blind BM25 arm
    per catalogue (the first is the baseline of every comparison)."""
    folder = write_desk(root)
    (folder / "surfaces" / "renamed.yaml").write_text(RENAMED)
    (folder / "v1.jsonl").write_text("".join(
        json.dumps({"id": rid, "messages": [{"role": "user", "content": text}], "expected": label,
                    "slice": "desk"}) + "\n" for rid, text, label in REQUESTS))
    freeze_version(folder, "v1", ["desk"])
    (folder / "weights").mkdir()
    (folder / "weights" / "w1.json").write_text(json.dumps({"window": "w1", "source": "test", "weights": WEIGHTS}))
    for name, surface in catalogues.items():
        assert main(["tasks", "catalogue", str(folder / "surfaces" / f"{surface}.yaml"),
                     "--out", str(folder / "catalogues" / f"{name}.json")]) == 0
    arms = "".join(f"  - {{name: {name}, catalogue: {name}}}\n" for name in catalogues)
    first, *others = catalogues
    comparisons = "".join(f"  - {{baseline: {first}, arm: {other}}}\n" for other in others)
    (folder / "experiments" / "labels.yaml").write_text(textwrap.dedent("""\
        name: desk-labels
        taskset: ..
        version: v1
        seeds: [1, 2, 3]
        batch_size: 6
        weights: w1
        defaults: {prompt: default, selector: lexical, model: bm25-okapi, options: {name_weight: 0}}
        arms:
        """) + arms + "comparisons:\n" + comparisons)
    return folder


def test_a_prefixed_or_renamed_catalogue_records_the_label_each_offered_name_stands_for(tmp_path, capsys):
    folder = selection_desk(tmp_path, {"plain": "plain", "prefixed": "prefixed", "renamed": "renamed"})
    assert "5 offered under another name than their label (offered_as)" in capsys.readouterr().out
    written = json.loads((folder / "catalogues" / "prefixed.json").read_text())
    assert written["offered_as"] == {"list_tickets": "desk.find_tickets", "get_ticket": "desk.get_ticket",
                                     "close_ticket": "desk.close_ticket", "escalate_ticket": "desk.escalate_ticket",
                                     "broken_report": "desk.broken_report"}
    assert "offered_as" not in json.loads((folder / "catalogues" / "plain.json").read_text())
    renamed = load_catalogue(folder, "renamed")
    assert renamed.offered_as["close_ticket"] == "resolve_ticket" and renamed.offered_as["get_ticket"] == "get_ticket"
    assert "close_ticket" in renamed.label_names and "resolve_ticket" not in renamed.label_names


def test_selection_rows_expect_the_label_as_the_arm_offers_it_and_accuracy_does_not_move(tmp_path):
    """An order- and name-blind router picks the same tools whatever they are called: every arm's accuracy is
    the plain arm's, and no label turns into 'none' (before the fix every prefixed row expected 'none')."""
    from tests.surface.plain_run import run_plain

    folder = selection_desk(tmp_path, {"plain": "plain", "prefixed": "prefixed", "renamed": "renamed"})
    figures = run_plain(folder / "experiments" / "labels.yaml", tmp_path / "wh").report.figures
    with duckdb.connect(str(tmp_path / "wh" / "tooleval.duckdb"), read_only=True) as con:
        expected = dict(con.execute("SELECT arm || '/' || request_id, min(expected) FROM selection_rows "
                                    "GROUP BY ALL").fetchall())
        accuracy = dict(con.execute("SELECT arm, avg(correct::INTEGER) FROM selection_rows GROUP BY arm").fetchall())
        tool_changes = con.execute("SELECT arm, tool, n_requests, change FROM paired_tool_changes "
                                   "ORDER BY arm, tool").fetchall()
        stable = con.execute("SELECT count(*) FILTER (WHERE label_stable), count(*) FROM paired_requests").fetchone()
        weighted = dict(con.execute("SELECT arm, weighted_accuracy FROM weighted_accuracy").fetchall())
        covered = dict(con.execute("SELECT arm, weight_covered FROM weighted_accuracy").fetchall())
        chosen = con.execute("SELECT count(*) FROM selection_rows p JOIN selection_rows q USING (request_id, seed) "
                             "WHERE p.arm = 'plain' AND q.arm = 'prefixed' AND p.correct <> q.correct").fetchone()[0]
    assert expected["prefixed/r1"] == "desk.close_ticket" and expected["prefixed/r4"] == "desk.find_tickets"
    assert expected["renamed/r1"] == "resolve_ticket" and expected["renamed/r3"] == "get_ticket"
    assert expected["plain/r1"] == "close_ticket"
    assert sorted(key for key, label in expected.items() if label == "none") == ["plain/r6", "prefixed/r6", "renamed/r6"]
    assert accuracy["plain"] > 0.5
    assert accuracy["prefixed"] == accuracy["plain"] == accuracy["renamed"] and chosen == 0
    # a prefix or rename is not a relabel: every request pairs per tool, under the label's own name
    assert stable == (12, 12)
    labels = ["broken_report", "close_ticket", "escalate_ticket", "get_ticket", "list_tickets", "none"]
    assert tool_changes == [(arm, tool, 1, 0.0) for arm in ("prefixed", "renamed") for tool in labels]
    assert sorted((c.arm, c.tool, c.n_relabelled) for c in figures.tool_changes) == [
        (arm, tool, 0) for arm in ("prefixed", "renamed") for tool in labels]  # the report's per-tool changes
    assert all(figures.weighted_changes[("plain", arm)].weight_covered == pytest.approx(1.0)
               for arm in ("prefixed", "renamed"))
    # production weights, named as labelled, weigh every arm's rows: the same traffic, the same figure
    assert [covered[arm] for arm in ("plain", "prefixed", "renamed")] == pytest.approx([1.0, 1.0, 1.0])
    assert weighted["plain"] > 0.5
    assert [weighted["prefixed"], weighted["renamed"]] == pytest.approx([weighted["plain"]] * 2)


def test_an_arm_whose_catalogue_offers_no_labelled_tool_is_refused_naming_the_arm_and_catalogue(tmp_path, capsys):
    """A prefixed catalogue that does not say which label each name stands for (one written before
    ``offered_as``, or by hand) would score every request against 'none': validate refuses it, exit 2."""
    folder = selection_desk(tmp_path, {"plain": "plain", "prefixed": "prefixed"})
    path = folder / "catalogues" / "prefixed.json"
    written = json.loads(path.read_text())
    written.pop("offered_as", None)
    path.write_text(json.dumps(written))
    capsys.readouterr()
    experiment = folder / "experiments" / "labels.yaml"
    assert main(["validate", str(experiment)]) == 2
    err = capsys.readouterr().err
    assert f"{experiment}:arm prefixed: [labels-offered-by-arm]" in err
    assert "names a tool of catalogue prefixed" in err and "broken_report, close_ticket" in err
    assert "arm plain" not in err
    assert not (tmp_path / "warehouse").exists()


def test_a_version_whose_labels_the_arm_offers_passes_validate(tmp_path, capsys):
    folder = selection_desk(tmp_path, {"plain": "plain", "prefixed": "prefixed"})
    capsys.readouterr()
    assert main(["validate", str(folder / "experiments" / "labels.yaml")]) == 0
    assert "v1: 6 requests, 4 weights: 12 label expectations passed" in capsys.readouterr().out


@pytest.mark.parametrize("surface, first_tool", [("plain", "close_ticket"), ("prefixed", "desk.close_ticket")])
def test_the_first_call_cross_tab_spells_a_tool_named_intent_as_the_arm_offers_it(tmp_path, surface, first_tool):
    """A task whose declared intent names a backend tool (``close_ticket``) is shown, in an arm on a prefixed
    surface, under the name the agent was offered and called (``desk.close_ticket``): the intent's own row."""
    from tests.surface.plain_run import run_plain

    tasks = [desk_task("close-1", "Please close ticket T-1002.",
                       {"state": [{"path": "tickets.T-1002.status", "equals": "closed"}]}, intent="close_ticket"),
             desk_task("status-1", "What is the status of T-1001?", {"reply": {"contains": "open"}},
                       slice_="questions", intent="status")]
    folder = write_desk(tmp_path, tasks, experiment=textwrap.dedent(f"""\
        name: desk-one
        taskset: ..
        version: t1
        seeds: [1, 2, 3]
        batch_size: 2
        defaults: {{agent: baseline}}
        arms:
          - {{name: A, surface: {surface}, prompt: default}}
        """))
    run_plain(folder / "experiments" / "four.yaml", tmp_path / "wh")
    with duckdb.connect(str(tmp_path / "wh" / "tooleval.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT intent, first_tool, n FROM task_first_calls ORDER BY intent").fetchall()
    assert rows[0] == (first_tool, first_tool, 3)
    assert rows[1][0] == "status"


GIT_REQUESTS = [
    ("g1", "What is the working tree status?", "git_status"),
    ("g2", "Show me the commit logs of this repository.", "git_log"),
    ("g3", "Unstage all staged changes.", "git_reset"),
    ("g4", "Which changes are staged for commit?", "git_diff_staged"),
    ("g5", "Switch branches to release.", "git_checkout"),
    ("g6", "What is the capital of Peru?", "none"),
]


def test_the_issue_case_a_git_server_catalogue_under_a_prefix_keeps_git_status(tmp_path):
    """The reading on a real server: mcp-server-git's tools (catalogue git-v1, imported from the server the lock pins)
    through a surface that prefixes them all with ``git.``, written with `tooleval tasks catalogue`: the request
    labelled git_status expects git.git_status (it expected 'none'), and the prefixed arm reads as the plain one
    (it read as a collapse)."""
    from tests.factories import ROOT
    from tests.surface.plain_run import run_plain

    folder = tmp_path / "git"
    (folder / "surfaces").mkdir(parents=True)
    (folder / "prompts").mkdir()
    (folder / "experiments").mkdir()
    (folder / "catalogues").mkdir()
    bundled = ROOT / "tasksets" / "mcp_git"
    (folder / "catalogues" / "git-v1.json").write_text((bundled / "catalogues" / "git-v1.json").read_text())
    surface = (bundled / "surfaces" / "git.yaml").read_text().replace(
        "{taskset_dir}/../../.venv/bin/mcp-server-git", str(ROOT / ".venv" / "bin" / "mcp-server-git"))
    names = [tool["name"] for tool in json.loads((folder / "catalogues" / "git-v1.json").read_text())["tools"]]
    (folder / "surfaces" / "git.yaml").write_text(surface)
    (folder / "surfaces" / "git_ns.yaml").write_text(
        surface.replace("name: git\n", "name: git_ns\n", 1) + f"transform:\n  prefix: {{git.: [{', '.join(names)}]}}\n")
    (folder / "prompts" / "default.md").write_text("Pick the one tool that fits, or none.\n")
    (folder / "v1.jsonl").write_text("".join(
        json.dumps({"id": rid, "messages": [{"role": "user", "content": text}], "expected": label,
                    "slice": "git"}) + "\n" for rid, text, label in GIT_REQUESTS))
    freeze_version(folder, "v1", ["git"])
    for name, surface_name in (("plain", "git"), ("prefixed", "git_ns")):
        assert main(["tasks", "catalogue", str(folder / "surfaces" / f"{surface_name}.yaml"),
                     "--out", str(folder / "catalogues" / f"{name}.json")]) == 0
    (folder / "experiments" / "git.yaml").write_text(textwrap.dedent("""\
        name: git-labels
        taskset: ..
        version: v1
        seeds: [1, 2, 3]
        batch_size: 6
        defaults: {prompt: default, selector: lexical, model: bm25-okapi, options: {name_weight: 0}}
        arms:
          - {name: plain, catalogue: plain}
          - {name: prefixed, catalogue: prefixed}
        comparisons:
          - {baseline: plain, arm: prefixed}
        """))
    run_plain(folder / "experiments" / "git.yaml", tmp_path / "wh")
    with duckdb.connect(str(tmp_path / "wh" / "tooleval.duckdb"), read_only=True) as con:
        expected = dict(con.execute("SELECT arm || '/' || request_id, min(expected) FROM selection_rows "
                                    "GROUP BY ALL").fetchall())
        accuracy = dict(con.execute("SELECT arm, avg(correct::INTEGER) FROM selection_rows GROUP BY arm").fetchall())
        stable = con.execute("SELECT count(*) FILTER (WHERE label_stable), count(*) FROM paired_requests").fetchone()
    assert expected["prefixed/g1"] == "git.git_status" and expected["plain/g1"] == "git_status"
    assert sorted(key for key, label in expected.items() if label == "none") == ["plain/g6", "prefixed/g6"]
    assert accuracy["plain"] >= 0.5 and accuracy["prefixed"] == accuracy["plain"]
    assert stable == (6, 6)


def test_a_decision_model_learns_the_labels_as_a_prefixed_catalogue_offers_them(tmp_path):
    """`tooleval train --catalogue prefixed` offers the prefixed tools: each request's training label is the
    tool as offered (it was 'none' for every request, which leaves one class to learn)."""
    from tasks.selectors.decision_models.labelled_inputs import catalogue_union, labelled_inputs
    from tasks.taskset.load_taskset import load_version

    folder = selection_desk(tmp_path, {"plain": "plain", "prefixed": "prefixed"})
    table = load_version(folder, "v1").table
    shared, offered_as = catalogue_union(folder, ["prefixed"])
    _, labels = labelled_inputs(table, shared, offered_as=offered_as)
    assert labels == ["desk.close_ticket", "desk.escalate_ticket", "desk.get_ticket", "desk.find_tickets",
                      "desk.broken_report", "none"]
    shared, offered_as = catalogue_union(folder, ["plain", "prefixed"])  # the first catalogue naming a label wins
    assert labelled_inputs(table, shared, offered_as=offered_as)[1][0] == "close_ticket" and len(shared) == 10
