"""What ``tooleval validate`` says of a task experiment: each version's task checks, a warning per surface
that carries one (an MCP server without annotations), and which MCP servers are pinned to a catalogue."""

from __future__ import annotations

from typing import Sequence

from tasks.surface.arms import SurfaceArm
from tasks.surface.catalogue_drift import pinned_note
from tasks.surface.task_checks import TaskCheckReport


def task_check_lines(report: TaskCheckReport) -> list[str]:
    return [f"{report.n_tasks} tasks: {report.n_rules} rules passed on {report.n_surfaces} surface(s)"]


def surface_notes(arms: Sequence[SurfaceArm]) -> list[str]:
    """A warning line per surface the arms run that carries one, then the pinned servers' note."""
    surfaces = {arm.surface.name: arm.surface for arm in arms}
    lines = [f"  warning: surface {name}: {warning}" for name, surface in surfaces.items()
             for warning in surface.warnings]
    note = pinned_note(arm.surface for arm in arms)
    return lines + ([f"  {note}"] if note else [])
