"""Production traffic: one record per turn of the live agent, and the settings that turn traffic into a
new task-set version (window, personal-data masking, stratified sampling).

A production log is a Parquet file (or a folder of them), a JSON Lines file, a DuckDB table, or an
OpenInference trace export; each reader yields ``ProductionTurn`` records. Columns or keys beyond the
documented ones are ignored.
"""

from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from schemas.taskset import Message

HINT_SOURCE = "production_first_tool"
"""Where a provisional label comes from: the tool the live agent called first (a hint, not a label)."""


class ProductionTurn(BaseModel):
    """One user turn the live agent answered: the request, what the agent called first, what followed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn_id: str = Field(description="Unique id of the turn in the log.")
    time: datetime = Field(description="When the user's message arrived (UTC; a time without zone is read as UTC).")
    user_message: str = Field(description="The user's message the agent answered.")
    earlier_turns: tuple[Message, ...] = Field(
        default=(), description="Earlier turns of the conversation, oldest first (user / assistant messages).")
    first_tool: str = Field(description="The tool the agent called first for this turn, or 'none' when it called none.")
    conversation_id: str | None = Field(default=None, description="The conversation the turn belongs to, if known.")
    user_retried: bool | None = Field(
        default=None, description="The user rephrased or repeated the request right after (null: not tracked).")
    handed_to_human: bool | None = Field(
        default=None, description="The conversation was handed to a human agent after this turn (null: not tracked).")
    empty_reply: bool | None = Field(
        default=None, description="The agent's reply was empty or unfinished (null: not tracked).")

    @field_validator("time")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)

    @field_validator("turn_id", "first_tool")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


class Window(BaseModel):
    """A production window: whole ISO weeks, from the Monday of the first to the Monday after the last."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="Window id, e.g. '2026-W44-W47' (or '2026-W52..2027-W03' across a year).")
    start: datetime = Field(description="First instant in the window (Monday 00:00 UTC).")
    end: datetime = Field(description="First instant after the window (Monday 00:00 UTC).")


class MaskingRules(BaseModel):
    """Which personal data is masked in every message before anything is written."""

    model_config = ConfigDict(extra="forbid")

    emails: bool = Field(default=True, description="Mask e-mail addresses as [EMAIL].")
    phones: bool = Field(default=True, description="Mask phone numbers as [PHONE].")
    cards: bool = Field(default=True, description="Mask payment card numbers (Luhn-valid, 13-19 digits) as [CARD].")
    addresses: bool = Field(default=True, description="Mask street addresses and postcodes as [ADDRESS].")
    order_ids: list[str] = Field(
        default_factory=list,
        description="Regular expressions of order ids to mask as [ORDER_ID], e.g. 'NW-\\d{7}' (any case).")
    gift_cards: list[str] = Field(
        default_factory=list,
        description="Regular expressions of gift-card codes (money: whoever reads one can spend it) to mask as "
                    "[GIFT_CARD], e.g. 'GC-\\w{4}-\\w{4}' (any case).")
    sign_offs: bool = Field(
        default=True, description="Mask the name after a closing phrase at the end of a message ('Kind regards, "
                                  "Maria', 'thanks - tom') as [NAME].")
    sign_off_phrases: list[str] = Field(
        default_factory=lambda: ["kind regards", "best regards", "warm regards", "regards", "many thanks",
                                 "thank you", "thanks", "cheers", "best wishes", "best", "sincerely",
                                 "yours sincerely", "yours faithfully", "all the best", "ta", "br"],
        description="Closing phrases whose following name is masked when sign_offs is on (any case).")
    extra: dict[str, str] = Field(
        default_factory=dict, description="More patterns: placeholder name -> regular expression (masked as [NAME]).")


class SamplingPlan(BaseModel):
    """How many requests to draw per tool from a window's traffic."""

    model_config = ConfigDict(extra="forbid")

    size: int = Field(default=600, ge=1, description="Requests to draw in all (floors first, the rest by volume).")
    floor_per_tool: int = Field(default=10, ge=0, description="At least this many requests per tool seen in the window.")
    floor_none: int = Field(default=20, ge=0, description="At least this many requests where the agent called no tool.")
    targets: dict[str, int] | None = Field(
        default=None,
        description="Target count per tool (e.g. from the sample-size planner); replaces the volume share, floors still apply.")
    target_half_width: float | None = Field(
        default=None, gt=0, lt=0.5,
        description=("Instead of size: every tool with at least planner_min_share of the window's turns gets the "
                     "requests the sample-size planner (tasks/stats/planner.py) needs for a 95% interval of "
                     "+-this (0.1 = 10 points) at planner_accuracy; the others get their floor."))
    planner_accuracy: float = Field(default=0.8, gt=0, lt=1, description="Accuracy the planner assumes per tool.")
    planner_min_share: float = Field(
        default=0.02, ge=0, le=1, description="Share of the window's turns from which a tool is planned, not floored.")
    seed: int = Field(description="Sampling seed: the same window, plan and seed draw the same requests.")
    near_duplicate_threshold: float = Field(
        default=0.7, gt=0, le=1,
        description="Character 4-gram Jaccard similarity at or above which two requests count as near-duplicates.")


class ToolSampleCount(BaseModel):
    """What the sample drew for one tool (or 'none')."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(description="Tool name or 'none'.")
    turns: int = Field(description="Turns in the window whose first tool was this one.")
    share: float = Field(description="Share of all turns in the window (including 'none').")
    candidates: int = Field(description="Distinct masked requests available after duplicate removal.")
    target: int = Field(description="Requests the plan asked for.")
    sampled: int = Field(description="Requests drawn.")
    shortfall: int = Field(description="target - sampled when too few distinct requests were available.")


class ResampleSummary(BaseModel):
    """``resamples/<version>.json``: what a resampled version was drawn from and how."""

    model_config = ConfigDict(extra="forbid")

    taskset: str = Field(description="Task-set name.")
    version: str = Field(description="The version written.")
    parent: str | None = Field(description="The version it follows (the newest adjudicated one when drawn).")
    reused: bool = Field(default=False, description="An identical earlier draw was found: no new version was written.")
    drawn_as: str | None = Field(default=None, description=(
        "When an earlier draw was found and labels were imported from its queue since: the version it was drawn "
        "as; ``version`` is then the newest version those imports made, ``queue_file`` that version's queue of "
        "what is still provisional ('' when nothing is)."))
    source: str = Field(description="The production log read.")
    window: Window = Field(description="The production window sampled.")
    weights_file: str = Field(description="The production weights written for the window (path in the task set).")
    queue_file: str = Field(description="The labelling queue written for the version (path in the task set).")
    plan: SamplingPlan = Field(description="The sampling plan used.")
    masking: MaskingRules = Field(description="The masking rules applied.")
    n_turns: int = Field(description="Turns in the window.")
    n_distinct: int = Field(description="Distinct masked requests in the window (after exact-duplicate removal).")
    n_near_duplicates_removed: int = Field(
        description="Drawn requests skipped as near-duplicates of earlier versions or of the sample itself.")
    n_earlier_duplicates_removed: int = Field(description="Distinct requests already present in earlier versions.")
    masked: dict[str, int] = Field(description="Personal-data masks applied in the window, per kind.")
    unknown_tools: dict[str, int] = Field(
        description="Turns whose first tool is in no catalogue of the task set (left out of weights and sample).")
    newest_turn: datetime | None = Field(description="Time of the newest turn in the whole log.")
    per_tool: list[ToolSampleCount] = Field(description="Volume, target and draw per tool, highest volume first.")


class TrafficConfig(BaseModel):
    """``production/traffic.yaml`` of a task set: where its production log is and how it is resampled.

    Every value can be overridden per run (CLI flags, flow parameters).
    """

    model_config = ConfigDict(extra="forbid")

    log: str = Field(description="Production log, relative to the task-set folder (Parquet file or folder, JSONL, "
                                 "DuckDB file, or an OpenInference trace export).")
    format: str = Field(default="auto", description="auto | parquet | jsonl | duckdb | openinference.")
    table: str = Field(default="turns", description="Table name when the log is a DuckDB file.")
    window_weeks: int = Field(default=4, ge=1, description="Weeks in the default window (the last complete ones).")
    masking: MaskingRules = Field(default_factory=MaskingRules, description="Personal data to mask.")
    sampling: dict[str, Any] = Field(
        default_factory=dict, description="SamplingPlan fields other than the seed (size, floors, targets, ...).")
    max_label_age_days: int = Field(
        default=28, ge=1, description="Warn when the newest adjudicated version is older than this.")
    max_log_lag_days: int = Field(
        default=8, ge=0, description="Warn when the newest turn of the log is older than this (a stale export).")
