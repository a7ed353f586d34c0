"""How every ``tooleval`` command ends: one exit code per way, documented in the README."""

from __future__ import annotations

EXIT_OK = 0
"""Every gate passed (or the run has no criteria); other commands: done."""
EXIT_GATE_FAILED = 1
"""The run completed and a registered acceptance gate failed."""
EXIT_BAD_INPUT = 2
"""Bad input: nothing was run or written (the message names the file, the line or id and the rule)."""
EXIT_MODEL_MISMATCH = 3
"""A hosted model served a different model id than the pinned one: its rows are errors, the run failed."""
EXIT_NOT_JUDGED = 4
"""The acceptance criteria changed after registration (or a gate lacked its data): the run was not judged."""


def verdict_exit_code(verdict: object) -> int:
    """FAIL -> 1, NOT JUDGED -> 4, PASS or no criteria -> 0."""
    status = getattr(verdict, "status", "NO CRITERIA")
    return {"FAIL": EXIT_GATE_FAILED, "NOT JUDGED": EXIT_NOT_JUDGED}.get(status, EXIT_OK)
