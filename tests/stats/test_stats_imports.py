"""`tooleval report` and `tooleval plan` must start fast: the statistics they import are closed form and pull
in neither scipy nor statsmodels (scipy.stats alone costs ~1.4 s to import). A module check, not a timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PLAN = ["tasks.stats.planner"]
REPORT = ["tasks.stats.wilson", "tasks.stats.paired", "tasks.stats.weighted", "tasks.stats.calibration",
          "tasks.stats.interaction", "tasks.selection.figures", "tasks.selection.tables", "tasks.selection.gates",
          "tasks.report.format"]


def loaded_after_import(modules: list[str]) -> set[str]:
    code = ("import sys, json\n" + "".join(f"import {m}\n" for m in modules)
            + "print(json.dumps(sorted(sys.modules)))")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # cwd=ROOT: with -c the working directory comes first on sys.path, before PYTHONPATH
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, check=True)
    return set(json.loads(out.stdout))


def test_plan_imports_only_the_standard_library_for_its_statistics():
    loaded = loaded_after_import(PLAN)
    assert not {"scipy", "statsmodels", "numpy", "pandas"} & loaded


def test_the_report_statistics_import_neither_scipy_nor_statsmodels():
    loaded = loaded_after_import(REPORT)
    assert "scipy" not in loaded and "statsmodels" not in loaded


def test_the_trained_selector_loads_neither_its_training_code_nor_scipy():
    loaded = loaded_after_import(["tasks.selectors.decision_models.trained", "tasks.selectors.offline"])
    assert "tasks.selectors.decision_models.train_decision_model" not in loaded  # the import circle through it is cut
    assert not {m for m in loaded if m == "scipy" or m.startswith("scipy.")}
