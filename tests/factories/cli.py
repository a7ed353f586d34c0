"""The CLI run in-process, as a test calls it: ``tooleval ARGS...`` through ``flows.cli.main``."""

from __future__ import annotations

import pytest

from flows.cli import main


def run_cli(capsys: pytest.CaptureFixture[str], *args) -> tuple[int, str, str]:
    """Run ``tooleval`` with ``args`` (each made a string); (its exit code, its stdout, its stderr)."""
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err
