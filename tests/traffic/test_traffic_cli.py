"""The refusal of provisional labels, and the traffic commands of the CLI (resample, queue)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows.cli import build_parser, main
from tasks.files.input_errors import InputError
from tasks.run.prepare_run import prepare_run
from tasks.taskset.load_taskset import load_version
from tasks.taskset.provisional_labels import refuse_provisional
from tests.factories.taskset import write_taskset
from tests.factories.traffic import make_turns, write_duckdb, write_jsonl


def provisional_experiment(root: Path) -> Path:
    path = root / "experiments" / "provisional.yaml"
    path.write_text("name: on-v2\ntaskset: ..\nversion: v2\nseeds: [1, 2, 3]\nweights: 2026-W44-W47\n"
                    "defaults: {prompt: default, selector: lexical, model: bm25-okapi}\n"
                    "arms: [{name: production, catalogue: giftcards}]\n")
    return path


def test_provisional_labels_are_refused_unless_allowed(resampled, tmp_path, capsys):
    experiment = provisional_experiment(resampled)
    prepared = prepare_run(experiment)
    with pytest.raises(InputError) as caught:
        refuse_provisional(prepared.versions, allow=False)
    (problem,) = caught.value.problems
    n = len(load_version(resampled, "v2").requests)
    assert problem.rule == "labels-adjudicated" and problem.file.endswith("v2.jsonl")
    assert problem.where.startswith(f"{n} of {n} requests (first: id prod-t")
    assert refuse_provisional(prepared.versions, allow=True) == {"v2": n}
    warehouse = tmp_path / "wh"
    assert main(["run", str(experiment), "--warehouse", str(warehouse)]) == 2
    assert "labels-adjudicated" in capsys.readouterr().err and not warehouse.exists()


def test_new_commands_have_help(capsys):
    for path in (["resample"], ["queue"], ["queue", "import"]):
        with pytest.raises(SystemExit) as exited:
            build_parser().parse_args([*path, "--help"])
        assert exited.value.code == 0 and f"usage: tooleval {' '.join(path)}" in capsys.readouterr().out
    run_help = build_parser()._subparsers._group_actions[0].choices["run"].format_help()
    assert "--allow-provisional" in run_help and "--task-runner" in run_help


@pytest.mark.parametrize("fmt", ["jsonl", "duckdb"])
def test_cli_resample_of_a_small_log(tmp_path, capsys, fmt):
    root = write_taskset(tmp_path / "small")
    turns = make_turns(400)
    log = (write_jsonl(tmp_path / "turns.jsonl", turns) if fmt == "jsonl"
           else write_duckdb(tmp_path / "log.duckdb", turns, table="agent_turns"))
    code = main(["resample", str(root), "--traffic", str(log), "--table", "agent_turns", "--window", "2026-W44-W47",
                 "--size", "30", "--floor", "3", "--floor-none", "4", "--seed", "11", "--order-id-pattern", r"NW-\d{7}"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "wrote small v2 (parent v1)" in out and "weights/2026-W44-W47.json" in out
    v2 = load_version(root, "v2")
    summary = json.loads((root / "resamples" / "v2.json").read_text())
    assert len(v2.requests) == sum(t["sampled"] for t in summary["per_tool"]) and v2.manifest.sampling_seed == 11
    assert 20 <= len(v2.requests) <= 30  # few distinct texts per tool here: near-duplicates are skipped
    assert not any("NW-" in r.text or "@example.com" in r.text for r in v2.requests)
    counts = v2.manifest.counts_by_label
    assert counts["none"] >= 4 and min(counts.values()) >= 3
    assert counts["refund_order"] == max(counts.values()) > counts["search_kb"]
    assert summary["source"] == ("turns.jsonl" if fmt == "jsonl" else "log.duckdb::agent_turns")
    # the commands it ends with can be pasted: their paths are the task set's, as given
    commands = [line.split(": ", 1)[1].split() for line in out.splitlines() if "tooleval queue" in line]
    assert [c[:3] for c in commands] == [["tooleval", "queue", "export"], ["tooleval", "queue", "import"]]
    assert all(Path(c[3]) == root / "queue" / "v2.queue.jsonl" and Path(c[3]).is_file() for c in commands)


def test_cli_resample_bad_input_exits_2_writing_nothing(tmp_path, capsys):
    root = write_taskset(tmp_path / "small")
    before = sorted(str(p) for p in root.rglob("*"))
    assert main(["resample", str(root), "--traffic", str(tmp_path / "missing.jsonl")]) == 2
    assert "file-exists" in capsys.readouterr().err
    assert main(["resample", str(root)]) == 2  # no log given and no production/traffic.yaml
    assert "traffic-config" in capsys.readouterr().err
    assert sorted(str(p) for p in root.rglob("*")) == before


def test_cli_resample_with_targets_from_the_planner(tmp_path, capsys):
    root = write_taskset(tmp_path / "small")
    log = write_jsonl(tmp_path / "turns.jsonl", make_turns(400))
    targets = tmp_path / "targets.json"
    targets.write_text(json.dumps({"refund_order": 8, "track_shipment": 2}))
    assert main(["resample", str(root), "--traffic", str(log), "--window", "2026-W44-W47", "--targets", str(targets),
                 "--floor", "3", "--floor-none", "3"]) == 0, capsys.readouterr()
    counts = load_version(root, "v2").manifest.counts_by_label
    assert counts == {"refund_order": 8, "track_shipment": 3, "reset_password": 3, "search_kb": 3, "none": 3}
    targets.write_text("{not json")
    assert main(["resample", str(root), "--traffic", str(log), "--targets", str(targets)]) == 2
    assert "[json]" in capsys.readouterr().err
