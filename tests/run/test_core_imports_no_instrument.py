"""The core imports no instrument and no selector: tasks/experiment, tasks/run, tasks/report, warehouse and
the evaluate flow reach an instrument only through the registry (tasks/instrument_registry.py), so a new
instrument is one package plus one registry line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tasks.instrument_registry import INSTRUMENTS

ROOT = Path(__file__).resolve().parents[2]
CORE = ["tasks/experiment", "tasks/run", "tasks/report", "warehouse", "flows/evaluate.py",
        "tasks/instrument_api.py", "tasks/instrument_card.py", "tasks/instrument_registry.py",
        "tasks/core_records.py", "tasks/report_types.py"]
FORBIDDEN = (*INSTRUMENTS.values(), "tasks.selectors")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def core_files() -> list[Path]:
    files = []
    for entry in CORE:
        path = ROOT / entry
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return files


@pytest.mark.parametrize("path", core_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_a_core_module_imports_no_instrument_and_no_selector(path):
    named = sorted(module for module in imported_modules(path)
                   if any(module == banned or module.startswith(banned + ".") for banned in FORBIDDEN))
    assert not named, f"{path.relative_to(ROOT)} imports {', '.join(named)}"


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from tasks.surface.arms import SurfaceArm\n    import tasks.selectors.x\n")
    assert {"tasks.surface.arms", "tasks.selectors.x"} <= imported_modules(sample)
