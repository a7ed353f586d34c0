"""The records a task run registers beside its rows: the run, its arms, its comparisons."""

from __future__ import annotations

from datetime import datetime, timezone

from schemas.run_records import ComparisonRecord
from schemas.surface.rows import SurfaceArmRecord, SurfaceRunRecord
from tasks.run.registration_records import tooleval_version
from tasks.surface.prepare_task_run import PreparedTaskRun
from warehouse.register_task_run import TaskRunRegistration


def task_registration(prepared: PreparedTaskRun, run_id: str, started_at: datetime,
                      criteria_hash: str | None = None,
                      criteria_registered_at: datetime | None = None) -> TaskRunRegistration:
    experiment = prepared.experiment
    record = SurfaceRunRecord(
        run_id=run_id, experiment=experiment.name, experiment_path=str(experiment.path),
        experiment_hash=experiment.experiment_hash, taskset=prepared.taskset, started_at=started_at,
        finished_at=datetime.now(timezone.utc), n_runs=0, n_calls=0, criteria_hash=criteria_hash,
        criteria_registered_at=criteria_registered_at, tooleval_version=tooleval_version())
    arms = [SurfaceArmRecord(
        run_id=run_id, arm=arm.name, rung=arm.rung, surface=arm.surface.name, surface_hash=arm.surface.surface_hash,
        prompt=arm.prompt_name, prompt_hash=arm.prompt_hash, model_id=arm.model_id, agent=arm.agent,
        agent_options_hash=arm.agent_options_hash, reads_prompt=arm.reads_prompt, taskset_version=arm.version,
        taskset_hash=prepared.versions[arm.version].manifest.content_hash, n_tools=len(arm.surface.tools),
        seeds=list(experiment.seeds)) for arm in experiment.arms]
    comparisons = [ComparisonRecord(run_id=run_id, baseline=c.baseline, arm=c.arm, changed=list(c.changed))
                   for c in experiment.comparisons]
    return TaskRunRegistration(experiment=record, arms=arms, comparisons=comparisons)
