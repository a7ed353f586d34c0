"""Input a run refuses on a cheap check (request ids, the manifest's hash, the production weights) is refused by
the real console script before any Prefect server starts: exit 2, the file and the rule named, no
``prefect.db`` in a fresh PREFECT_HOME, and no line saying Prefect is starting."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.drill.bad_inputs import case_duplicate_id, case_edited_after_freeze, weights
from tests.factories import ROOT

CASES = {
    "duplicate request ids": (case_duplicate_id, ("v1.jsonl:line 3 (id r1)", "[ids-unique]")),
    "manifest hash mismatch": (case_edited_after_freeze, ("v1.manifest.json", "[manifest-hash]", "edited")),
    "weights summing to 0.7": (lambda tmp: weights(tmp, {"refund_order": 0.5, "track_shipment": 0.2}),
                               ("w1.json", "[weights-sum-to-one]", "0.7")),
    "a negative weight": (lambda tmp: weights(tmp, {"refund_order": 1.2, "track_shipment": -0.2}),
                          ("w1.json", "[weights-non-negative]", "track_shipment")),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_cheap_check_refuses_before_prefect_starts(tmp_path: Path, case: str):
    build, fragments = CASES[case]
    built = build(tmp_path / "inputs")
    home = tmp_path / "prefect-home"
    home.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(home), PYTHONPATH=str(ROOT), TOOLEVAL_CACHE_DIR=str(tmp_path / "cache"))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "flows.launch", *built.args], env=env, cwd=ROOT,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    seconds = time.monotonic() - started
    assert done.returncode == 2, done.stderr
    message = " ".join(done.stderr.split())  # folded at the terminal's width
    assert all(fragment in message for fragment in fragments), done.stderr
    assert "Traceback" not in done.stderr
    assert "Prefect" not in done.stderr  # nothing said of a server that never starts
    assert not (home / "prefect.db").exists()
    assert not (home / "tooleval-server" / "server.json").exists()
    assert not built.warehouse.exists()
    assert seconds < 30, f"{seconds:.1f} s: refused after the slow checks, not by the cheap ones"
