"""`tooleval validate` (of a version, of an experiment of either instrument) and `tooleval tasks validate`
answer without the libraries a run or a report needs: the modules they read import no frame library
(polars), no DuckDB, no jsonschema (a remembered catalogue's schemas are not checked again), no Great
Expectations and no Prefect; each is imported by the function that uses it. A module check, not a timing."""

from __future__ import annotations

from tests.stats.test_stats_imports import loaded_after_import

VALIDATE = ["flows.api", "flows.cli", "tasks.run.validate_experiment", "tasks.taskset.validate_version",
            "tasks.selection.instrument", "tasks.surface.instrument", "tasks.surface.load_surface",
            "tasks.surface.task_checks"]
"""What the validate commands import before they read a file: the API, both instruments and the checks."""


HEAVY = {"polars", "duckdb", "pyarrow", "numpy", "jsonschema", "great_expectations", "pandas", "prefect"}


def test_the_validate_commands_modules_import_no_heavy_library():
    assert HEAVY & loaded_after_import(VALIDATE) == set()
