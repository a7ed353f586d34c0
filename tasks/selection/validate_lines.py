"""What ``tooleval validate`` says of a selection experiment's checks: a version's label checks."""

from __future__ import annotations

from tasks.taskset.check_cache import CheckReport


def label_check_lines(report: CheckReport) -> list[str]:
    """A version's label checks: what they looked at, and whether the same content passed before."""
    weights = f", {report.n_weights} weights" if report.n_weights else ""
    return [f"{report.n_requests} requests{weights}: {report.n_expectations} label expectations passed",
            *(["(remembered: this content passed before)"] if report.cached else [])]
