"""What every run registers: the run, its arms, its declared comparisons, and the columns each row of a
unit of work starts with.

Each instrument adds its own fields (schemas/selection/rows.py, schemas/surface/rows.py) and keeps them in
tables of its own (warehouse/tables.py: ``runs`` / ``arms`` / ``comparisons`` for selection,
``task_experiments`` / ``task_arms`` / ``task_comparisons`` for tasks on a surface).
"""

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class RunRecord(BaseModel):
    """One registered run."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    run_id: str = Field(description="Run id: time-ordered and unique.")
    experiment: str = Field(description="Experiment name.")
    experiment_path: str = Field(description="Experiment file as given.")
    experiment_hash: str = Field(description="sha256 of the experiment file.")
    taskset: str = Field(description="Task-set name.")
    started_at: datetime = Field(description="When the run started.")
    finished_at: datetime = Field(description="When its rows were registered.")
    criteria_hash: str | None = Field(description="sha256 of the acceptance criteria registered before the first call.")
    criteria_registered_at: datetime | None = Field(description="When the criteria were registered.")
    tooleval_version: str = Field(description="Version of tooleval that ran.")
    trace_endpoint: str | None = Field(
        default=None, description="OTLP collector the run's traces were sent to (otlp://HOST:PORT); null: not traced.")
    trace_project: str | None = Field(
        default=None, description="Phoenix project of the run's traces (tasks/tracing/trace_ids.py finds a row's trace).")


class ArmRecord(BaseModel):
    """One arm of a run."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    run_id: str = Field(description="The run.")
    arm: str = Field(description="Arm name.")
    rung: int = Field(description="1-based position in the experiment.")
    prompt: str = Field(description="Prompt name.")
    prompt_hash: str = Field(description="sha256 of the prompt text.")
    model_id: str = Field(description="Pinned model id.")
    taskset_version: str = Field(description="Task-set version.")
    taskset_hash: str = Field(description="Content hash of the task-set version (from its manifest).")
    n_tools: int = Field(description="Tools in the arm's catalogue or surface, all offered (0 for per-request "
                                     "catalogues); a narrowed selection arm sends its chat model only the decision "
                                     "model's shortlist of them, each row's chat_n_tools.")
    seeds: list[int] = Field(description="Seeds run.")
    unpinned_reason: str | None = Field(
        default=None, description="Why the arm's model is not pinned (a self-hosted id without a date or "
                                  "model_revision: its unpinned_reason); null when pinned or offline.")
    n_items: int | None = Field(default=None, description="The arm's items in this run (rows, task runs).")
    n_from_cache: int | None = Field(
        default=None, description="Of those, how many came from the result cache (no model call this run).")
    unpinned_from_cache: bool = Field(
        default=False, description="The model is unpinned and some of its results came from the cache: they may "
                                   "predate a change of the server's model (the run warned; rerun with --no-cache "
                                   "to ask the server again).")


class ComparisonRecord(BaseModel):
    """One declared comparison of a run: the tables ``comparisons`` and ``task_comparisons``."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    run_id: str = Field(description="The run.")
    baseline: str = Field(description="Arm compared from.")
    arm: str = Field(description="Arm compared to.")
    changed: list[str] = Field(description="Respects in which the two arms differ.")


class UnitRow(BaseModel):
    """The columns every instrument's row of a unit (run, arm, seed) starts with, before the item's own."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    run_id: str = Field(description="The run this row belongs to.")
    experiment: str = Field(description="Experiment name.")
    arm: str = Field(description="Arm name.")
    rung: int = Field(description="1-based position of the arm in the experiment (ladder order).")
    seed: int = Field(description="Seed: which recorded permutation of the tool order was offered.")
    taskset: str = Field(description="Task-set name.")
    taskset_version: str = Field(description="Task-set version id.")


class UnitKey(BaseModel):
    """The key of a unit of work (run, arm, seed) that a record of it starts with: a seed's order, a call's row."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    run_id: str = Field(description="The run.")
    arm: str = Field(description="The arm.")
    seed: int = Field(description="The seed.")
