"""A deployment's flow run that stopped while its batches still run at the provider: a follow-up flow run of
the same deployment with the same parameters, scheduled a poll interval later, picks them up, so no worker
waits on the provider. Outside a deployment there is nothing to schedule: the command exits 8 instead."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Mapping

FOLLOW_UP_S = 600.0
"""How long after a detached flow run stops its follow-up starts (the deployments' ``follow_up_s``)."""


def schedule_follow_up(after_s: float = FOLLOW_UP_S, *, deployment_id: Any = None,
                       parameters: Mapping[str, Any] | None = None, flow_run_id: Any = None) -> Any:
    """The follow-up flow run (Prefect's FlowRun, Scheduled at now + ``after_s``) of ``deployment_id`` (default:
    the current flow run's deployment) with ``parameters`` (default: the current flow run's), or None when the
    flow run is no deployment's. Keyed by ``flow_run_id`` (default: the current one), so a retried flow run
    schedules one follow-up, not two."""
    from prefect.runtime import deployment, flow_run

    deployment_id = deployment_id or deployment.id
    if not deployment_id:
        return None
    from prefect.deployments import run_deployment

    run_id = flow_run_id or flow_run.id
    return run_deployment(deployment_id, parameters=dict(parameters if parameters is not None else flow_run.parameters),
                          scheduled_time=datetime.now(timezone.utc) + timedelta(seconds=after_s), timeout=0,
                          as_subflow=False, idempotency_key=f"batches-after-{run_id}" if run_id else None)


def follow_up_message(line: str, follow_up: Any) -> str:
    """The stopped flow run's Completed message: its waiting line and the follow-up it scheduled."""
    return f"{line}; follow-up flow run {follow_up.name} ({follow_up.id}) at {follow_up.expected_start_time:%H:%M} UTC"
