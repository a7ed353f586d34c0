"""The evaluate flow's runs record their parameters exactly as Prefect's own encoder would, without importing
FastAPI (whose encoder Prefect uses) when every parameter is a plain value or the prepared run."""

from __future__ import annotations

import enum
import subprocess
import sys
from pathlib import Path

from prefect import Flow

from flows.evaluate import evaluate
from tasks.run.prepare_run import CheckedRun

ROOT = Path(__file__).resolve().parents[2]


class Colour(str, enum.Enum):
    RED = "red"


def test_the_recorded_parameters_are_prefects_own():
    prepared = object.__new__(CheckedRun)
    parameters = dict(experiment_path="a.yaml", warehouse_dir=None, use_cache=True, max_calls=3, max_spend_usd=1.5,
                      prepared=prepared, batch_wait="hold", path=Path("/x"), colour=Colour.RED, nested=[1, {"a": 2}])
    recorded = evaluate.serialize_parameters(parameters)
    assert recorded == Flow.serialize_parameters(evaluate, parameters)
    assert list(recorded) == list(parameters) and recorded["prepared"] == "<CheckedRun>"
    assert recorded["path"] == "/x" and recorded["colour"] == "red"


def test_plain_parameters_are_recorded_without_importing_fastapi():
    code = ("import sys\nfrom flows.evaluate import evaluate\n"
            "print(evaluate.serialize_parameters({'experiment_path': 'a.yaml', 'warehouse_dir': None, 'max_calls': 2,"
            " 'use_cache': True}), 'fastapi' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "False", done.stdout
