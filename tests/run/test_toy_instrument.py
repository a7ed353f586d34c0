"""A third instrument, registered at runtime from the test folder alone (tests/run/toy_instrument), runs end to
end through the real flow: its experiment file is validated and run, its rows land in its own table, its view
reads them, and its report is published and read again; no file of the core names it."""

from __future__ import annotations

import duckdb
import pytest

from flows.cli import main
from tasks.instrument_registry import INSTRUMENTS, card, register

EXPERIMENT = """\
name: guesses
instrument: toy
taskset: ..
version: v1
seeds: [1, 2, 3]
batch_size: 4
defaults: {prompt: plain, model: toy-1}
arms:
  - {name: A-parity, rule: parity}
  - {name: B-even, rule: always-even}
"""


@pytest.fixture
def toy(monkeypatch, tmp_path):
    monkeypatch.setitem(INSTRUMENTS, "toy", INSTRUMENTS.get("toy", ""))  # put back as it was after the test
    register("toy", "tests.run.toy_instrument")
    folder = tmp_path / "numbers"
    (folder / "prompts").mkdir(parents=True)
    (folder / "experiments").mkdir()
    (folder / "prompts" / "plain.md").write_text("Is it even?\n")
    (folder / "v1.txt").write_text("\n".join(str(n) for n in range(1, 11)) + "\n")  # 5 even, 5 odd
    (folder / "experiments" / "guesses.yaml").write_text(EXPERIMENT)
    return folder / "experiments" / "guesses.yaml"


def test_a_registered_instrument_is_validated_by_its_own_checks(toy, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLEVAL_WAREHOUSE", str(tmp_path / "wh"))
    assert main(["validate", str(toy)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # folded at the terminal's width
    assert f"OK {toy}" in out and "2 arm(s) x 3 seed(s): 60 rows planned" in out and "v1: 10 numbers" in out
    assert "comparisons: 1" in out and "note:" not in out
    assert not (tmp_path / "wh").exists()


def test_an_experiment_file_naming_an_unknown_instrument_is_refused(toy, capsys):
    toy.write_text(EXPERIMENT.replace("instrument: toy", "instrument: toys"))
    assert main(["validate", str(toy)]) == 2
    assert "'toys' is no instrument" in capsys.readouterr().err


def test_a_file_without_instrument_is_read_by_its_arms_with_a_note(toy, capsys):
    toy.write_text(EXPERIMENT.replace("instrument: toy\n", ""))
    assert main(["validate", str(toy)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"note: {toy} does not say which instrument it is for: read as 'instrument: toy' from its arms" in out
    toy.write_text(EXPERIMENT.replace("instrument: toy\n", "").replace("rule: parity}", "rule: parity, selector: x}"))
    assert main(["validate", str(toy)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "[one-instrument] the arms use rule, selector" in err


@pytest.mark.slow
def test_a_toy_instrument_runs_end_to_end_through_the_flow(prefect_harness, toy, capsys, tmp_path):
    warehouse = tmp_path / "wh"
    assert main(["run", str(toy), "--warehouse", str(warehouse)]) == 0
    printed = capsys.readouterr().out
    out = " ".join(printed.split())  # folded at the terminal's width (a long path within a word)
    assert "60 rows in 18 work units" in out and "45 guessed right" in out, printed
    assert f"{warehouse / 'toy_rows'}" in "".join(printed.split())
    con = duckdb.connect(str(warehouse / "tooleval.duckdb"), read_only=True)
    (run_id, n_rows), = con.execute("SELECT run_id, n_rows FROM toy_runs").fetchall()
    accuracy = con.execute("SELECT arm, n_rows, n_correct FROM toy_accuracy ORDER BY arm").fetchall()
    arms = con.execute("SELECT arm, rule FROM toy_arms ORDER BY arm").fetchall()
    changed = con.execute("SELECT changed FROM toy_comparisons").fetchall()
    con.close()
    assert n_rows == 60 and accuracy == [("A-parity", 30, 30), ("B-even", 30, 15)]
    assert arms == [("A-parity", "parity"), ("B-even", "always-even")] and changed == [(["rule"],)]
    assert (warehouse / "reports" / run_id / "report.md").is_file()
    assert main(["report", run_id, "--warehouse", str(warehouse)]) == 0
    report = capsys.readouterr().out
    assert "Guesses per arm" in report and "B-even" in report
    assert card("toy").run_kind == "toy run"
