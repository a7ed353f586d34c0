"""Criteria registered before the first selection, judged after registration, through the real flow
(Prefect), a real DuckDB file and the CLI's exit code."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import flows.evaluate as evaluate_module
from flows.cli import EXIT_GATE_FAILED, EXIT_NOT_JUDGED, main, verdict_exit_code
from flows.evaluate import evaluate
from schemas.criteria import Verdict
from tasks import core_records
from tasks.files.content_hash import sha256_hex
from tests.factories.criteria import criteria_text, gate
from tests.factories.taskset import REQUESTS, write_experiment, write_taskset

CRITERIA = criteria_text("shop-gates",
                         gate("busy-tools-hold", "tool_drop", min_volume_share=0.05, max_drop_points=10),
                         gate("perfect-existing", "slice_floor", floors={"existing": 1.0}, arms="all"),
                         gate("clean-replies", "failure_rate", max_rate=0.02))

# a request the lexical router must get wrong: refund words, labelled track_shipment
TRICKY = {"id": "r6", "messages": [{"role": "user", "content": "my parcel arrived smashed, refund my money"}],
          "expected": "track_shipment", "slice": "existing"}


def shop(tmp_path: Path) -> tuple[Path, Path]:
    root = write_taskset(tmp_path / "shop", requests=REQUESTS + [TRICKY])
    (root / "prompts" / "terse.md").write_text("Be terse.\n")
    (root / "experiments").mkdir(exist_ok=True)
    criteria = root / "experiments" / "criteria.yaml"
    criteria.write_text(CRITERIA)
    experiment = write_experiment(root, arms=[{"name": "a"}, {"name": "b", "prompt": "terse"}],
                                  comparisons="ladder", criteria="criteria.yaml")
    return experiment, criteria


def test_the_run_registers_its_criteria_before_selecting_and_fails_a_gate(prefect_harness, tmp_path, monkeypatch):
    experiment, criteria = shop(tmp_path)
    events: list[str] = []  # in the order they happened (appends are atomic across Prefect's worker threads)

    def recording(name: str, real):
        def call(*args, **kwargs):
            events.append(name)
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(evaluate_module, "register_criteria", recording("registered", evaluate_module.register_criteria))
    monkeypatch.setattr(core_records, "write_partition", recording("landed", core_records.write_partition))
    warehouse = tmp_path / "warehouse"
    summary = evaluate(experiment_path=str(experiment), warehouse_dir=str(warehouse))

    assert summary.verdict.status == "FAIL"
    status = {g.name: g.status for g in summary.verdict.gates}
    assert status == {"busy-tools-hold": "PASS", "perfect-existing": "FAIL", "clean-replies": "PASS"}
    # hash and time of registration are on the run record, and came before every landed row
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    digest, when = con.execute("SELECT criteria_hash, criteria_registered_at FROM runs").fetchall()[0]
    con.close()
    assert digest == sha256_hex(criteria.read_bytes()) == summary.verdict.criteria_hash
    assert when is not None and events.count("registered") == 1
    assert events[0] == "registered" and events.count("landed") == len(list((warehouse / "rows").rglob("*.parquet")))
    copy = warehouse / "registrations" / summary.run_id / "criteria.yaml"
    assert copy.read_bytes() == criteria.read_bytes()
    # the reports carry the verdict first
    markdown = Path(summary.reports["markdown"]).read_text()
    assert markdown.startswith("## tooleval: ✘ FAIL") and "perfect-existing" in markdown
    html = Path(summary.reports["html"]).read_text()
    assert html.index("VERDICT: FAIL") < html.index("<table")


def test_criteria_changed_after_registration_make_the_run_refuse_to_judge(prefect_harness, tmp_path, monkeypatch):
    experiment, criteria = shop(tmp_path)
    real_register_run = evaluate_module.register_run

    def move_the_gate_then_register(*args, **kwargs):
        criteria.write_text(CRITERIA.replace("{existing: 1.0}", "{existing: 0.1}"))  # after seeing numbers
        return real_register_run(*args, **kwargs)

    monkeypatch.setattr(evaluate_module, "register_run", move_the_gate_then_register)
    summary = evaluate(experiment_path=str(experiment), warehouse_dir=str(tmp_path / "warehouse"))
    assert summary.verdict.status == "NOT JUDGED" and not summary.verdict.gates
    assert "changed after it was registered" in summary.verdict.reason


def test_the_cli_prints_the_verdict_first_and_exits_1_on_a_failed_gate(prefect_harness, tmp_path, capsys):
    experiment, _ = shop(tmp_path)
    warehouse = tmp_path / "warehouse"
    code = main(["run", str(experiment), "--warehouse", str(warehouse)])
    out = capsys.readouterr().out
    assert code == EXIT_GATE_FAILED
    assert out.lstrip().startswith("VERDICT: FAIL")
    assert "✘ FAIL perfect-existing" in out and "verdict:       FAIL" in out
    # `tooleval report` shows the recorded verdict too
    assert main(["report", "--warehouse", str(warehouse)]) == 0
    assert capsys.readouterr().out.lstrip().startswith("VERDICT: FAIL")


def test_a_broken_criteria_file_is_bad_input_before_anything_runs(tmp_path, capsys):
    experiment, criteria = shop(tmp_path)
    criteria.write_text(CRITERIA.replace("kind: slice_floor", "kind: slice_flor"))
    warehouse = tmp_path / "warehouse"
    assert main(["run", str(experiment), "--warehouse", str(warehouse)]) == 2
    assert "criteria.yaml:gates.1" in capsys.readouterr().err
    assert not warehouse.exists()


@pytest.mark.parametrize("status,code", [("FAIL", EXIT_GATE_FAILED), ("NOT JUDGED", EXIT_NOT_JUDGED)])
def test_verdict_codes_block_a_merge(status, code):
    assert verdict_exit_code(Verdict(run_id="r", status=status)) == code
