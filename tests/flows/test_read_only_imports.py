"""`tooleval validate` (of a version, of an experiment of either instrument) and `tooleval tasks validate`
answer without the libraries a run or a report needs: the modules they read import no frame library
(polars), no DuckDB, no jsonschema (a remembered catalogue's schemas are not checked again), no Great
Expectations and no Prefect; each is imported by the function that uses it. A module check, not a timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.factories import ROOT
from tests.stats.test_stats_imports import loaded_after_import

VALIDATE = ["flows.api", "flows.cli", "tasks.run.validate_experiment", "tasks.taskset.validate_version",
            "tasks.selection.instrument", "tasks.surface.instrument", "tasks.surface.load_surface",
            "tasks.surface.task_checks"]
"""What the validate commands import before they read a file: the API, both instruments and the checks."""


HEAVY = {"polars", "duckdb", "pyarrow", "numpy", "jsonschema", "great_expectations", "pandas", "prefect"}


def test_the_validate_commands_modules_import_no_heavy_library():
    assert HEAVY & loaded_after_import(VALIDATE) == set()


def test_an_experiments_check_reads_its_task_set_without_polars_or_numpy_once_its_labels_passed(tmp_path):
    """A check of an experiment with a trained arm, whose version's label checks passed before: the labels,
    ids and texts its checks read come from the requests as read, with no frame built and no model loaded."""
    ladder = ROOT / "tasksets" / "support" / "experiments" / "ladder.yaml"
    code = ("import sys, json\nfrom pathlib import Path\n"
            "from tasks.run.validate_experiment import checked_experiment_lines\n"
            f"lines = checked_experiment_lines(Path({str(ladder)!r}))\n"
            "print(json.dumps([lines, sorted(sys.modules)]))")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOOLEVAL_CACHE_DIR": str(tmp_path)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                      cwd=ROOT, check=True).stdout) for _ in range(2)]
    (first, _), (again, loaded) = runs
    assert "    (remembered: this content passed before)" in again and first == [
        line for line in again if line != "    (remembered: this content passed before)"]
    assert "4 arm(s) x 3 seed(s): 6,480 rows planned" in "\n".join(again)
    assert {"polars", "numpy"} & set(loaded) == set()


def test_a_check_runs_with_the_collector_held_and_turns_it_on_again(monkeypatch):
    """`validate` runs with the cyclic garbage collector off (it would scan what the check imports again and
    again); it is on again when main returns, whether the check passed or raised."""
    import gc

    from flows import api, cli

    seen = []

    def check(*args, **kwargs):
        seen.append(gc.isenabled())
        if len(seen) > 1:
            raise FileNotFoundError("gone.yaml")
        return "OK"

    monkeypatch.setattr(api, "validate", check)
    assert gc.isenabled()
    assert cli.main(["validate", "any.yaml"]) == 0 and gc.isenabled()
    assert cli.main(["validate", "gone.yaml"]) == cli.EXIT_BAD_INPUT and gc.isenabled()
    assert seen == [False, False]


def test_held_by_the_console_script_a_check_keeps_the_collector_off_and_other_commands_turn_it_on(monkeypatch):
    """The console script imports the tool with the collector held (flows/launch.py): `validate` keeps it held
    to the end; any other command (`plan`) turns it on once its arguments are read."""
    import gc

    from flows import api, cli, gc_pause

    monkeypatch.setattr(api, "validate", lambda *args, **kwargs: "OK")
    try:
        gc_pause.pause()
        assert cli.main(["validate", "any.yaml"]) == 0 and not gc.isenabled()
        assert cli.main(["plan", "--accuracy", "0.9", "--requests", "200", "--half-width", "5"]) == 0
        assert gc.isenabled()
    finally:
        gc.unfreeze()
        gc.enable()
