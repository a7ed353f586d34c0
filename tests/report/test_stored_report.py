"""``tooleval report`` prints a run's report from the copy kept beside its report files (reports/<run_id>/
report.json) byte for byte as computing it prints, without the figures' libraries; and computes it again
whenever anything it was computed from changed (the warehouse file, the run's registration, the code) or
the copy is unreadable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import duckdb
import pytest

from flows.cli import main as cli_main
from schemas.selection.criteria import SelectionCriteria
from tasks.report import publish, stored_report
from tasks.report.judge import judge as judge_with
from tasks.selection.figures import load_figures
from tasks.selection.gates import JUDGES
from tests.report.test_report_render import known_run
from warehouse.location import Warehouse

ROOT = Path(__file__).resolve().parents[2]
RUN = "run1"


def settle(warehouse: Warehouse) -> None:
    """Wait until the warehouse file is old enough for its state to be kept (a fraction of a second)."""
    assert stored_report.settled_state(warehouse, wait_s=5) is not None


@pytest.fixture()
def warehouse(tmp_path) -> Warehouse:
    """A three-arm run with weights and a saved FAIL/PASS verdict over two gates."""
    con = known_run(tmp_path / "tooleval.duckdb").finish()
    figures = load_figures(con, RUN)
    con.close()
    criteria = SelectionCriteria.model_validate({"name": "t", "gates": [
        {"name": "busy-tools-hold", "kind": "tool_drop", "min_volume_share": 0.03, "max_drop_points": 10},
        {"name": "router", "kind": "confidence_gap", "min_gap_points": 20}]})
    location = Warehouse(tmp_path)
    publish.save_verdict(location, partial(judge_with, judges=JUDGES)(figures, criteria))
    settle(location)
    return location


def printed(warehouse: Warehouse, capsys, monkeypatch, columns: int, *args: str) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    capsys.readouterr()
    assert cli_main([*args, "--warehouse", str(warehouse.root)]) == 0
    return capsys.readouterr().out


def kept_file(warehouse: Warehouse) -> Path:
    return warehouse.reports_dir / RUN / stored_report.STORED_FILE


read_figures = publish.read_figures


def no_computing(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the report was computed, not read from its kept copy")

    monkeypatch.setattr(publish, "read_figures", refuse)


@pytest.mark.parametrize("args", [("report", RUN), ("report",), ("report", RUN, "--format", "markdown")])
def test_the_kept_copy_prints_byte_for_byte_what_computing_prints(warehouse, capsys, monkeypatch, args):
    for columns in (80, 200):
        kept_file(warehouse).unlink(missing_ok=True)
        computed = printed(warehouse, capsys, monkeypatch, columns, *args)
        assert kept_file(warehouse).is_file()
        with monkeypatch.context() as patch:
            no_computing(patch)
            assert printed(warehouse, capsys, monkeypatch, columns, *args) == computed
    assert "VERDICT" in computed or "##" in computed


def zeroed(text: str) -> str:
    """What a crash of the machine can leave of a file written without a flush to disk: its length, with a
    block of its data never written (zeros)."""
    block = min(4096, len(text) - 100)
    return text[:100] + "\0" * block + text[100 + block:]


@pytest.mark.parametrize("damage", ["truncated", "not json", "wrong types", "empty", "wrong sections", "zeros"])
def test_a_damaged_kept_copy_is_computed_again_silently(warehouse, capsys, monkeypatch, damage):
    computed = printed(warehouse, capsys, monkeypatch, 80, "report", RUN)
    text = kept_file(warehouse).read_text()
    data = json.loads(text)
    data["tables"][0]["rows"] = [[1, 2]]
    sections = json.loads(text)
    sections["tables"][1]["sections"] = ["0"]
    kept_file(warehouse).write_text({"truncated": text[: len(text) // 2], "not json": "\0garbage",
                                     "wrong types": json.dumps(data), "empty": "",
                                     "wrong sections": json.dumps(sections), "zeros": zeroed(text)}[damage])
    assert printed(warehouse, capsys, monkeypatch, 80, "report", RUN) == computed
    assert json.loads(kept_file(warehouse).read_text())["tables"] == json.loads(text)["tables"]  # kept again


@pytest.mark.parametrize("damage", ["truncated", "empty", "zeros", "wrong types"])
def test_a_damaged_latest_runs_file_is_not_answered_from(warehouse, capsys, monkeypatch, damage):
    """``tooleval report`` with no run reads the latest run from latest_runs.json: damaged, it finds the
    latest run in the warehouse and computes its report."""
    computed = printed(warehouse, capsys, monkeypatch, 80, "report")
    latest = warehouse.reports_dir / stored_report.LATEST_FILE
    text = latest.read_text()
    data = json.loads(text)
    data["latest"] = {name: [RUN] for name in data["latest"]}  # parses, but not a run's name
    latest.write_text({"truncated": text[: len(text) // 2], "empty": "", "zeros": "\0" * len(text),
                       "wrong types": json.dumps(data)}[damage])
    with monkeypatch.context() as patch:
        computing = []
        patch.setattr(publish, "read_figures", lambda *a, **k: computing.append(1) or read_figures(*a, **k))
        assert printed(warehouse, capsys, monkeypatch, 80, "report") == computed
    assert computing  # computed, not read from the kept copy
    assert json.loads(latest.read_text()) == json.loads(text)  # kept again


def test_a_write_to_the_warehouse_is_never_answered_by_the_kept_copy(warehouse, capsys, monkeypatch):
    before = printed(warehouse, capsys, monkeypatch, 200, "report", RUN)
    con = duckdb.connect(str(warehouse.db_path))
    # a table shared by runs (the weights window), not a row of the run itself
    con.execute("UPDATE production_weights SET weight = CASE WHEN tool = 'gift_cards' THEN 0.9 ELSE 0.05 END")
    con.close()
    after = printed(warehouse, capsys, monkeypatch, 200, "report", RUN)
    assert after != before
    kept_file(warehouse).unlink()
    assert printed(warehouse, capsys, monkeypatch, 200, "report", RUN) == after


def test_a_changed_registration_or_code_is_never_answered_by_the_kept_copy(warehouse, capsys, monkeypatch):
    printed(warehouse, capsys, monkeypatch, 80, "report", RUN)
    assert stored_report.stored_report(warehouse, RUN, None) is not None
    verdict = warehouse.registrations_dir / RUN / publish.VERDICT_FILE
    data = json.loads(verdict.read_text())
    data["reason"] = "judged again by hand"
    verdict.write_text(json.dumps(data))
    assert stored_report.stored_report(warehouse, RUN, None) is None
    assert "judged again by hand" in printed(warehouse, capsys, monkeypatch, 80, "report", RUN)
    assert stored_report.stored_report(warehouse, RUN, None) is not None
    monkeypatch.setattr(stored_report, "code_stamp", lambda: "another version of the code")
    assert stored_report.stored_report(warehouse, RUN, None) is None


def test_a_warehouse_file_written_a_moment_ago_is_not_kept(warehouse):
    os.utime(warehouse.db_path)
    assert not stored_report.settled(stored_report.warehouse_state(warehouse))
    assert stored_report.settled_state(warehouse) is None
    time.sleep(0.2)
    assert stored_report.settled(stored_report.warehouse_state(warehouse))


def test_the_kept_copy_is_read_without_the_figures_libraries(warehouse, capsys, monkeypatch):
    computed = printed(warehouse, capsys, monkeypatch, 80, "report", RUN)
    script = ("import sys\nfrom flows.cli import main\ncode = main(sys.argv[1:])\n"
              "print('LOADED', sorted(m for m in ('polars', 'numpy', 'pyarrow', 'duckdb', 'pydantic') "
              "if m in sys.modules), file=sys.stderr)\nsys.exit(code)")
    done = subprocess.run([sys.executable, "-c", script, "report", RUN, "--warehouse", str(warehouse.root)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stderr
    assert done.stdout == computed
