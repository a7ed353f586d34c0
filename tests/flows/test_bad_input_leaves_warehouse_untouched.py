"""Bad input stops `tooleval run` before Prefect starts, with a clear message, writing nothing."""

from __future__ import annotations

import json

from flows.cli import EXIT_BAD_INPUT
from tests.factories.cli import run_cli
from tests.factories.taskset import REQUESTS, write_experiment, write_taskset


def test_label_error_stops_the_run_and_writes_nothing(tmp_path, capsys):
    requests = [dict(r) for r in REQUESTS]
    requests[1] = {**requests[1], "expected": "track_parcel"}
    root = write_taskset(tmp_path / "shop", requests=requests)
    experiment = write_experiment(root)
    warehouse = tmp_path / "warehouse"
    code, _, err = run_cli(capsys, "run", str(experiment), "--warehouse", str(warehouse))
    assert code == EXIT_BAD_INPUT
    assert "v1.jsonl:line 2 (id r2): [label-offered]" in err and "track_parcel" in err
    assert not warehouse.exists()


def test_one_change_rule_stops_the_run(tmp_path, capsys):
    root = write_taskset(tmp_path / "shop")
    (root / "prompts" / "terse.md").write_text("Be terse.\n")
    experiment = write_experiment(root, arms=[{"name": "a"}, {"name": "b", "prompt": "terse", "model": "bm25-b"}],
                                  comparisons="ladder")
    warehouse = tmp_path / "warehouse"
    code, _, err = run_cli(capsys, "run", str(experiment), "--warehouse", str(warehouse))
    assert code == EXIT_BAD_INPUT and "[one-change]" in err and "comparison a -> b" in err
    assert not warehouse.exists()


def test_edited_frozen_version_stops_the_run(tmp_path, capsys):
    root = write_taskset(tmp_path / "shop")
    with (root / "v1.jsonl").open("a") as handle:
        handle.write(json.dumps({"id": "r9", "messages": [{"role": "user", "content": "x"}],
                                 "expected": "none", "slice": "existing"}) + "\n")
    warehouse = tmp_path / "warehouse"
    code, _, err = run_cli(capsys, "run", str(write_experiment(root)), "--warehouse", str(warehouse))
    assert code == EXIT_BAD_INPUT and "[manifest-hash]" in err and "v1.manifest.json" in err
    assert not warehouse.exists()
