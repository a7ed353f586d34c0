"""The resample flow: settings -> (an identical earlier draw, or draw -> label checks -> publish).

Reads a window of the production log, masks personal data in memory (no unmasked text crosses a task
boundary or reaches Prefect's result storage: these tasks persist nothing), and publishes a new version
with provisional labels, the window's production weights and the labelling queue.
"""

from __future__ import annotations

from datetime import datetime

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from schemas.traffic import ResampleSummary
from tasks.traffic.resample_version import (
    ResampleDraft,
    ResampleSettings,
    check_resample,
    draw_resample,
    previous_resample,
    publish_resample,
    resample_settings,
)

QUIET = {"cache_policy": NO_CACHE, "persist_result": False, "log_prints": False}
"""The settings of a task that persists nothing (the weekly flow's tasks too)."""


@task(name="resample-settings", **QUIET)
def settings_task(taskset_dir: str, options: dict) -> ResampleSettings:
    return resample_settings(taskset_dir, **options)


@task(name="draw-sample", **QUIET)
def draw_task(taskset_dir: str, settings: ResampleSettings) -> ResampleDraft:
    return draw_resample(taskset_dir, settings)


@task(name="label-checks-draft", **QUIET)
def check_draft_task(draft: ResampleDraft):
    return check_resample(draft)


@task(name="publish-version", **QUIET)
def publish_task(draft: ResampleDraft) -> ResampleSummary:
    return publish_resample(draft)


@flow(name="resample", log_prints=False)
def resample(taskset_dir: str = "tasksets/support", traffic: str | None = None, traffic_format: str | None = None,
             traffic_table: str | None = None, window: str | None = None, weeks: int | None = None,
             size: int | None = None, floor_per_tool: int | None = None, floor_none: int | None = None,
             seed: int | None = None, order_id_patterns: list[str] | None = None,
             target_half_width: float | None = None, now: datetime | None = None) -> ResampleSummary:
    """Draw a new version of the task set from its production log (defaults: production/traffic.yaml).

    ``target_half_width`` (e.g. 0.1): size each busy tool with the sample-size planner instead of ``size``."""
    sampling = {"size": size, "floor_per_tool": floor_per_tool, "floor_none": floor_none,
                "target_half_width": target_half_width}
    settings = settings_task(taskset_dir, {"traffic": traffic, "traffic_format": traffic_format,
                                           "traffic_table": traffic_table, "window": window, "weeks": weeks,
                                           "now": now, "seed": seed, "sampling": sampling,
                                           "masking": {"order_ids": order_id_patterns}})
    previous = previous_resample(taskset_dir, settings)
    if previous is not None:
        get_run_logger().info("window %s was drawn before: %s", settings.window.id, previous.version)
        return previous
    draft = draw_task(taskset_dir, settings)
    check_draft_task(draft)
    summary = publish_task(draft)
    get_run_logger().info("%s %s from window %s", summary.taskset, summary.version, summary.window.id)
    return summary
