"""Warehouse records of tasks done on a tool surface: one row per (run, arm, seed, task) in ``task_runs``,
one row per tool call in ``task_calls``, and the run's registers (``task_experiments``, ``task_arms``;
schemas/run_records.py: their common fields and ``task_comparisons``). Every counter of the report is a GROUP BY over these rows.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.run_records import ArmRecord, RunRecord, UnitKey, UnitRow

StopReason = Literal["model_stop", "text_call", "max_calls", "max_turns", "max_tokens", "max_wall", "error",
                     "empty_reply", "run_budget", "surface_error"]
"""Why a run ended.

- model_stop: the agent replied without calling a tool (it was done, or gave up);
- text_call: the agent's reply wrote a tool call as text (``functions.NAME:``, ``<tool_call>{...}``: markup
  the server did not return as a structured call); the call is recorded as invalid and ``as_text``, and
  nothing is sent back (the agent's doing, or its server's chat template's: cached like model_stop);
- max_calls / max_turns / max_tokens / max_wall: the task's budget was spent;
- error: the provider failed after its retries (or served another model than the pin): never cached;
- empty_reply: the reply was empty or cut short (no tool call, no text);
- run_budget: the run's spend or call cap was reached before this task could go on: never cached;
- surface_error: the tool surface itself failed (an MCP server could not start, crashed, or hung past the
  call's time limit): never cached.
"""

WantedBy = Literal["forbidden", "wants", "outcome"]
"""Which rule decided whether a call was one the task asked for (tasks/surface/wanted_actions.py).

- forbidden: it matches the task's ``forbids`` or its assertion's ``not_called``: unwanted;
- wants: the task declares ``wants``: wanted when the call matches an entry, unwanted when its tool is named
  there with other arguments or when it is an irreversible action of a tool not named there;
- outcome: nothing declared about it: wanted when the run met its assertion, unwanted when it did not.
"""

FAILED_STOPS: tuple[str, ...] = ("error", "run_budget", "surface_error")
"""Stop reasons that say the run could not be carried out (not the agent's doing): never cached."""


class CallRecord(BaseModel):
    """One tool call as it happened (no run context: cacheable with its task's outcome)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    call_index: int = Field(description="1-based position of the call in the run.")
    turn: int = Field(description="1-based agent turn the call came in (parallel calls share a turn).")
    name: str = Field(description="The tool name as the agent called it (mapped back from the wire), offered or not.")
    tool: str | None = Field(description="The backend tool it maps to (before prefixes and renames); null if unknown.")
    arguments: str | None = Field(description="Arguments as compact JSON text (raw text when not JSON).")
    valid: bool = Field(description="An offered tool with arguments valid under its JSON schema: sent to the backend.")
    invalid_reason: str | None = Field(default=None, description="Why a call was invalid (never executed).")
    as_text: bool = Field(default=False, description="An invalid call written as text in the reply (tool-call markup "
                                                     "the server did not return as a structured call); named after "
                                                     "the tool the markup names, else after the markup. The run "
                                                     "stopped with text_call.")
    executed: bool = Field(description="The backend ran the call (valid, within the budget).")
    error: bool = Field(description="Executed and refused by the backend (missing record, permission, bad state).")
    error_detail: str | None = Field(default=None, description="The backend's refusal, as sent back to the agent.")
    result_chars: int = Field(description="Characters of the result (or error) text sent back to the agent.")
    result_records: int | None = Field(default=None, description="Records in the result, where it is a list or a page.")
    is_retry: bool = Field(description="Same tool and same arguments as an earlier call of this run.")
    irreversible: bool = Field(description="An executed, not refused call of a tool marked irreversible.")
    handoff: bool = Field(description="An executed, not refused call of a tool that puts the case on a human's desk.")
    upstream_reads: int = Field(description="Pages or records the backend fetched upstream for this call.")
    backend_ms: float = Field(description="Wall time of the backend's execution (0 when not executed).")
    skipped_budget: bool = Field(default=False, description="Not executed: the task's call budget was already spent.")
    server: str | None = Field(default=None, description="The MCP server of the tool; null for a Python toolkit.")


class TaskOutcome(BaseModel):
    """One run of one task by one agent under one tool order (no run context: cacheable)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    task_id: str = Field(description="The task run.")
    success: bool = Field(description="Every part of the task's assertion held when the run ended.")
    failed_assertions: list[str] = Field(default_factory=list, description="The parts that did not hold.")
    stop_reason: StopReason = Field(description="Why the run ended (see StopReason).")
    detail: str | None = Field(default=None, description="What went wrong when the run stopped on an error (no secrets).")
    n_turns: int = Field(description="Agent turns (model replies) in the run.")
    calls: list[CallRecord] = Field(default_factory=list, description="Every call, in order.")
    final_reply: str | None = Field(default=None, description="The agent's last text reply (first 2,000 characters).")
    input_tokens: int | None = Field(default=None, description="Prompt tokens billed over every turn.")
    output_tokens: int | None = Field(default=None, description="Completion tokens billed over every turn.")
    cost_usd: float | None = Field(default=None, description="Cost of every turn from the price file.")
    price_version: str | None = Field(default=None, description="Date of the price file cost_usd came from.")
    wall_ms: float = Field(description="Wall time of the whole run.")
    agent_ms: float = Field(default=0.0, description="Of which waiting for the agent's turns (model calls or the baseline).")
    provider_retries: int = Field(default=0, description="Retried provider requests (429, 5xx, time-outs) over the run.")
    served_model_id: str | None = Field(default=None, description="Model id as the provider reported it.")
    results_unseen_turns: int = Field(default=0, description=(
        "Turns whose prompt did not grow by the tool results fed before them: the server may drop tool "
        "results (tasks/surface/chat_agent.py)."))


class TaskRunRow(UnitRow):
    """One row per (run, arm, seed, task): the table ``task_runs``."""

    task_id: str = Field(description="Task id.")
    slice: str = Field(description="Slice of the task; slices are never averaged into one figure.")
    intent: str | None = Field(description="Declared intent of the task.")
    surface: str = Field(description="Surface name of the arm.")
    prompt: str = Field(description="Prompt name of the arm.")
    model_id: str = Field(description="Pinned model id of the arm.")
    agent: str = Field(description="Agent kind: baseline (offline, does not read prompts), openai, anthropic.")
    reads_prompt: bool = Field(description="Whether the agent reads the prompt (the offline baseline does not).")
    tool_order: list[str] = Field(description="Tools offered, in the seed's order (names as offered).")
    success: bool = Field(description="Every part of the task's assertion held when the run ended.")
    failed_assertions: list[str] = Field(description="The parts that did not hold.")
    stop_reason: StopReason = Field(description="model_stop / text_call / max_calls / max_turns / max_tokens / "
                                                "max_wall / error / empty_reply / run_budget / surface_error.")
    detail: str | None = Field(description="What went wrong when the run stopped on an error.")
    n_turns: int = Field(description="Agent turns.")
    n_calls: int = Field(description="Tool calls that counted against the budget, every kind (valid, invalid, "
                                     "errors); calls recorded after the budget was spent (skipped_budget) are not in it.")
    invalid_calls: int = Field(description="Calls rejected by schema validation, never executed (text_calls "
                                           "included).")
    text_calls: int = Field(description="Of invalid_calls, tool calls written as text in a reply (as_text).")
    error_calls: int = Field(description="Calls executed and refused by the backend.")
    retries: int = Field(description="Calls repeating an earlier call's tool and arguments in this run.")
    irreversible_actions: int = Field(description="Executed, not refused calls of irreversible tools.")
    upstream_reads: int = Field(description="Pages or records fetched upstream over the run.")
    irreversible_unwanted: int = Field(description="Of irreversible_actions, those the task did not ask for (see "
                                                   "WantedBy): the ones a human has to read.")
    upstream_reads_unwanted: int = Field(description="Of upstream_reads, those of calls the task did not ask for.")
    declares_actions: bool = Field(description="The task declares wants or forbids; else its run's outcome decides "
                                               "what was wanted.")
    handed_to_human: bool = Field(description="A call put the case on a human's desk (ticket, escalation).")
    first_tool: str | None = Field(description="The first tool called (name as offered), null when none was.")
    needed_tools: list[str] = Field(default_factory=list, description=(
        "Tools the task needs (its assertion's required calls, its wants, its intent when it names a tool), named "
        "as the arm's surface offers them; one the surface does not offer keeps its backend name "
        "(tasks/surface/tool_needs.py; the view task_tool_coverage)."))
    forbidden_tools: list[str] = Field(default_factory=list, description=(
        "Tools the task names as negative cases (its assertion's not_called, its forbids), named as the arm's "
        "surface offers them (tasks/surface/tool_needs.py; the view task_tool_coverage)."))
    final_reply: str | None = Field(description="The agent's last text reply (first 2,000 characters).")
    input_tokens: int | None = Field(description="Prompt tokens billed over every turn.")
    output_tokens: int | None = Field(description="Completion tokens billed over every turn.")
    cost_usd: float | None = Field(description="Cost of the run in US dollars.")
    price_version: str | None = Field(description="Date of the price file cost_usd came from.")
    wall_ms: float = Field(description="Wall time of the run in milliseconds.")
    agent_ms: float = Field(description="Of which the agent's turns.")
    provider_retries: int = Field(description="Retried provider requests over the run.")
    served_model_id: str | None = Field(description="Model id as served.")
    results_unseen_turns: int = Field(default=0, description=(
        "Turns whose prompt did not grow by the tool results fed before them (the server may drop tool results: "
        "the model answered without them)."))
    cache_hit: bool = Field(description="The outcome came from the task cache: no agent turn was run again.")


class _CallContext(UnitKey):
    """The run context of a tool call's row: its columns before the call's own (``TaskCallRow``)."""

    taskset_version: str = Field(description="Task-set version.")
    task_id: str = Field(description="The task.")
    slice: str = Field(description="Slice of the task.")
    intent: str | None = Field(description="Declared intent of the task.")


class TaskCallRow(CallRecord, _CallContext):
    """One row per tool call: the table ``task_calls`` (the columns of CallRecord, after the run's context)."""

    wanted: bool = Field(description="The task asked for this call (see WantedBy); decided when the rows are made, "
                                     "not cached with the outcome.")
    wanted_by: WantedBy = Field(description="The rule that decided: forbidden / wants / outcome.")


class SurfaceRunRecord(RunRecord):
    """One registered run of a task experiment: the table ``task_experiments``."""

    n_runs: int = Field(description="task_runs rows registered.")
    n_calls: int = Field(description="task_calls rows registered, calls recorded after a run's budget was spent "
                                     "(skipped_budget, never executed) included.")


class SurfaceArmRecord(ArmRecord):
    """One arm of a task run: the table ``task_arms``."""

    surface: str = Field(description="Surface name.")
    surface_hash: str = Field(description="sha256 of the surface: its file, its backend package's source, the tools offered.")
    agent: str = Field(description="Agent kind.")
    agent_options_hash: str = Field(description="sha256 of the agent's answer-changing options.")
    reads_prompt: bool = Field(description="Whether the agent reads the prompt.")
    surface_warnings: list[str] = Field(default_factory=list, description=(
        "What the report says about how the surface's tools are counted: an MCP server that gives no annotations "
        "and none of whose tools the surface marks (every tool a write, irreversible, one upstream read a call)."))
