"""How every ``tooleval`` command ends: one exit code per way, documented in docs/reference/exit-codes.md."""

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
"""Not judged: the acceptance criteria changed after registration, the run has no rows, no gate applied, or a gate
could not judge an arm it applies to (its figure undefined, or most of its units not carried out) and none failed."""
EXIT_NOT_REGISTERED = 5
"""The rows landed but another process held the DuckDB file past the bounded wait: run
``tooleval register RUN_ID`` (or any later run) to register, judge and report it without selecting again."""
EXIT_CRASHED = 6
"""An unexpected failure (a bug, a dead Prefect API, a full disk): the message says what; landed rows are kept."""

EXIT_NOT_COMPARABLE = 7
"""``tooleval compare``: the two runs' arms differ in more than the declared respect (catalogue, prompt, pinned or
served model id, selector, task-set version); the message names each differing id on both sides."""
EXIT_BATCHES_PENDING = 8
"""``--batch-wait detach``: batches still run at the provider; nothing was registered, judged or reported. Rerun the
same command to pick them up (it submits nothing twice)."""

EXIT_INTERRUPTED = 130
"""Stopped by SIGINT (Ctrl-C): 128 + 2, the shell's convention. The run stopped within about a second, without
waiting for the calls in flight; finished items are cached and landed rows kept: rerun to resume."""
EXIT_TERMINATED = 143
"""Stopped by SIGTERM (``kill``, a CI time-out, a container stop): 128 + 15, the shell's convention; as 130."""


def verdict_exit_code(verdict: object) -> int:
    """FAIL -> 1, NOT JUDGED -> 4, PASS or no criteria -> 0."""
    status = getattr(verdict, "status", "NO CRITERIA")
    return {"FAIL": EXIT_GATE_FAILED, "NOT JUDGED": EXIT_NOT_JUDGED}.get(status, EXIT_OK)


def run_exit_code(summary: object) -> int:
    """The exit code of a finished evaluate run (flows/evaluate.py RunSummary): a served model other than its
    pin -> 3, detached with batches still running -> 8, rows landed but not registered -> 5, else the verdict's
    code."""
    if getattr(summary, "batches_pending", 0):
        return EXIT_BATCHES_PENDING
    if getattr(summary, "halts", None):
        return EXIT_MODEL_MISMATCH
    if not getattr(summary, "registered", True):
        return EXIT_NOT_REGISTERED
    return verdict_exit_code(getattr(summary, "verdict", None))
