"""Bad input to `tooleval train` and to an arm naming a decision model: exit 2 before anything is computed."""

from __future__ import annotations

import yaml

from flows.cli import main
from tests.factories import SUPPORT


def test_train_refuses_bad_arguments_before_training(tmp_path, capsys):
    version = str(SUPPORT / "v1.jsonl")
    cases = [
        (["train", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "m.json")], "[file-exists]"),
        (["train", version, "--out", str(tmp_path / "m.json"), "--folds", "0"], "[folds]"),
        (["train", version, "--out", str(tmp_path)], "[out-file]"),
        (["train", version, "--out", str(tmp_path / "m.json" / "x.json")], "[out-writable]"),  # checked before any command: tasks/files/write_probe.py
    ]
    (tmp_path / "m.json").write_text("{}")  # a file where a folder would have to be
    for argv, rule in cases:
        assert main(argv) == 2, argv
        assert rule in capsys.readouterr().err


def test_an_arm_naming_a_file_that_is_no_decision_model_is_bad_input(tmp_path, capsys):
    (tmp_path / "not-a-model.json").write_text('{"weights": []}')
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(yaml.safe_dump({
        "name": "x", "taskset": str(SUPPORT), "version": "v1", "seeds": [1, 2, 3],
        "defaults": {"catalogue": "giftcards", "prompt": "default"},
        "arms": [{"name": "t", "selector": "trained", "model": "tooleval-hybrid",
                  "options": {"model_file": "not-a-model.json"}}]}))
    assert main(["fit", str(experiment), "--arm", "t"]) == 2
    err = capsys.readouterr().err
    assert "arm t: [router-files]" in err and "is not a decision model written by `tooleval train`" in err


def test_train_refuses_a_set_of_one_label(tmp_path, capsys):
    """A set whose 30 requests all carry one label is refused: it once trained to 'accuracy 100%, ECE 0.000'."""
    from tests.factories.taskset import write_taskset

    def request(i: int, expected: str) -> dict:
        return {"id": f"r{i}", "messages": [{"role": "user", "content": f"refund my order number {i} please"}],
                "expected": expected, "slice": "existing"}

    one = write_taskset(tmp_path / "one", requests=[request(i, "refund_order") for i in range(30)])
    assert main(["train", str(one / "v1.jsonl"), "--out", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err
    assert f"{one / 'v1.jsonl'}: [train-classes]" in err and "1 label(s) (refund_order 30)" in err
    assert not (tmp_path / "m.json").exists()
    nearly = write_taskset(tmp_path / "nearly", requests=[request(i, "refund_order") for i in range(29)]
                           + [request(29, "track_shipment")])
    assert main(["train", str(nearly / "v1.jsonl"), "--out", str(tmp_path / "m.json")]) == 2
    assert "[train-classes]" in capsys.readouterr().err
