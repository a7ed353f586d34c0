"""The views the weekly report reads (on known rows), the refusal of provisional labels, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from flows.cli import build_parser, main
from schemas.arrow import to_arrow_table
from schemas.rows import ArmRecord, ComparisonRecord, RunRecord, SelectionRow
from tasks.weekly.calibration_report import calibration_markdown, calibration_report
from tasks.files.input_errors import InputError
from tasks.taskset.load_taskset import load_version
from tasks.run.prepare_run import prepare_run
from tasks.taskset.provisional_labels import provisional_notice, refuse_provisional
from tests.stats.known_rows import NOW, selection_row
from tests.taskset_factory import write_taskset
from tests.traffic.traffic_factory import make_turns, write_duckdb, write_jsonl


def version_rows(arm: str, version: str, tool: str, n: int, n_correct: int, status: str = "adjudicated") -> list[dict]:
    rows = []
    for i in range(n):
        row = selection_row(f"{version}-{tool}-{i}", tool, i < n_correct, arm=arm, rung=1 if version == "v1" else 2)
        row.update(taskset_version=version, label_status=status)
        rows.append(row)
    return rows


@pytest.fixture
def calibrated() -> duckdb.DuckDBPyConnection:
    """Run 'run1': arm prod.v1 on v1 and prod.v2 on v2 (provisional), compared on the version only."""
    from warehouse.tables import create_tables
    from warehouse.views import create_views

    con = duckdb.connect(":memory:")
    create_tables(con)
    create_views(con)
    rows = (version_rows("prod.v1", "v1", "refund", 10, 8) + version_rows("prod.v1", "v1", "track", 4, 4)
            + version_rows("prod.v2", "v2", "refund", 20, 10, "provisional")
            + version_rows("prod.v2", "v2", "promo", 5, 5, "provisional"))

    def insert(table: str, model, records: list[dict]) -> None:
        con.register("_in", to_arrow_table(model, [model.model_validate(r).model_dump() for r in records]))
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _in")
        con.unregister("_in")

    insert("landed_rows", SelectionRow, rows)
    insert("runs", RunRecord, [dict(run_id="run1", experiment="w", experiment_path="w.yaml", experiment_hash="h",
                                    taskset="known", started_at=NOW, finished_at=NOW, n_rows=len(rows),
                                    criteria_hash=None, criteria_registered_at=None, weights_window=None,
                                    tooleval_version="test")])
    insert("arms", ArmRecord, [dict(run_id="run1", arm=f"prod.{v}", rung=i, catalogue="c", catalogue_hash="c",
                                    prompt="p", prompt_hash="p", model_id="m", selector="lexical", taskset_version=v,
                                    taskset_hash=v, n_tools=4, seeds=[1]) for i, v in ((1, "v1"), (2, "v2"))])
    insert("comparisons", ComparisonRecord, [dict(run_id="run1", baseline="prod.v1", arm="prod.v2", changed=["version"])])
    yield con
    con.close()


def test_version_calibration_view_on_known_rows(calibrated):
    rows = {r[0]: r[1:] for r in calibrated.execute(
        "select tool, old_requests, old_accuracy, new_requests, new_accuracy, difference from version_calibration "
        "where run_id = 'run1' and old_arm = 'prod.v1' and new_arm = 'prod.v2'").fetchall()}
    assert rows["refund"] == (10, 0.8, 20, 0.5, pytest.approx(-0.3))
    assert rows["track"] == (4, 1.0, None, None, None)
    assert rows["promo"] == (None, None, 5, 1.0, None)


def test_label_status_counts_and_the_notice(calibrated):
    counts = calibrated.execute("select taskset_version, label_status, n_requests from label_status_counts "
                                "where run_id = 'run1' order by 1").fetchall()
    assert counts == [("v1", "adjudicated", 14), ("v2", "provisional", 25)]
    (line,) = provisional_notice(calibrated, "run1")
    assert line.startswith("PROVISIONAL LABELS: v2 has 25 of 25 requests") and "--allow-provisional" in line


def test_calibration_report_reads_the_difference_per_slice_and_tool(calibrated):
    report = calibration_report(calibrated, "run1", "prod.v1", "prod.v2")
    assert (report.old_version, report.new_version) == ("v1", "v2")
    assert report.differences["existing"] == pytest.approx(15 / 25 - 12 / 14)
    text = calibration_markdown(report)
    assert "Calibration v2 vs v1" in text and "PROVISIONAL LABELS" in text and "| refund | 80.0% | 10 | 50.0% | 20 | -30.0 |" in text


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
