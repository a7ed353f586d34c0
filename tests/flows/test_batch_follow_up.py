"""A detached deployment flow run's follow-up (flows/batch_follow_up.py), against the session's Prefect server:
a flow run of the same deployment with the same parameters, Scheduled a poll interval later, one per stopped
flow run however often it asks; outside a deployment nothing is scheduled."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from flows.batch_follow_up import follow_up_message, schedule_follow_up


def test_a_follow_up_is_scheduled_once_for_the_same_deployment_and_parameters(prefect_harness):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        flow_id = client.create_flow_from_name("pre-change")
        deployment_id = client.create_deployment(flow_id=flow_id, name=f"follow-up-{uuid.uuid4().hex[:8]}")
    parameters = {"experiment_path": "tasksets/support/experiments/models.yaml", "batch": True,
                  "batch_wait": "detach", "follow_up_s": 900.0}
    stopped = uuid.uuid4()
    before = datetime.now(timezone.utc)
    follow_up = schedule_follow_up(900.0, deployment_id=deployment_id, parameters=parameters, flow_run_id=stopped)
    again = schedule_follow_up(900.0, deployment_id=deployment_id, parameters=parameters, flow_run_id=stopped)
    assert again.id == follow_up.id  # a retried flow run schedules no second follow-up
    with get_client(sync_client=True) as client:
        stored = client.read_flow_run(follow_up.id)
    assert stored.deployment_id == deployment_id and stored.parameters == parameters
    assert stored.state.is_scheduled() and stored.parent_task_run_id is None
    start = stored.state.state_details.scheduled_time
    assert before + timedelta(seconds=899) <= start <= datetime.now(timezone.utc) + timedelta(seconds=901)
    message = follow_up_message("WAITING — 2 batches still running", stored)
    assert message.startswith("WAITING — 2 batches still running; follow-up flow run ")
    assert str(stored.id) in message and f"{start:%H:%M} UTC" in message


def test_outside_a_deployment_nothing_is_scheduled(prefect_harness):
    assert schedule_follow_up(60.0, parameters={}, flow_run_id=uuid.uuid4()) is None
