"""Warehouse records of the selection instrument: one row per (run, arm, seed, request), the run and arm
registers (schemas/run_records.py: their common fields), seed orders, offered tool sets, traffic weights."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.run_records import ArmRecord, RunRecord, UnitKey, UnitRow

Outcome = Literal["correct", "wrong_tool", "no_tool", "invalid", "error", "empty"]
"""What happened on one row. Never merged: an invalid or empty reply is not a correct 'none'.

- correct: the chosen tool (or 'none') is the expected one;
- wrong_tool: a different offered tool was chosen (or a tool when 'none' was expected);
- no_tool: no tool was called when one was expected;
- invalid: the reply named an unknown tool or gave arguments that are not JSON or break the schema;
- error: the selector failed after its retries;
- empty: the reply was empty or unfinished.
"""

ArgumentOutcomeKind = Literal["right", "wrong_value", "missing_required", "missing_expected_optional",
                              "extra_allowed", "hallucinated", "wrong_type"]
"""What happened to one parameter of a call of the right tool, scored against the request's expected arguments.

- right: sent, of the schema's type, and it passes its matcher;
- wrong_value: sent, of the schema's type, and it fails its matcher (an ``absent`` one included);
- missing_required: the schema requires it and it was not sent;
- missing_expected_optional: optional in the schema, expected (not ``may_be_omitted``) and not sent;
- extra_allowed: sent, in the schema, not named by the expected arguments (free: does not make the call wrong);
- hallucinated: sent, and the tool's schema has no such parameter;
- wrong_type: sent, and its JSON type is not the schema's.
"""

ARGUMENT_OUTCOMES_RIGHT: tuple[str, ...] = ("right", "extra_allowed")
"""Parameter outcomes that leave a call's arguments right; any other makes ``arguments_correct`` false."""

RouteDesign = Literal["default", "forced", "gated", "narrowed"]
"""How a routed arm uses its decision model (see tasks/selectors/providers/routed.py)."""


SentAs = Literal["call", "batch", "call_after_batch"]
"""How a hosted chat request was sent: alone, in a provider batch, or alone after its batch request failed."""


class HostedTurn(BaseModel):
    """What a hosted model's turn adds to a selection and its row (routing and the judge; reply shapes, HTTP
    attempts, prompt caches, served-model evidence). Offline selectors leave every field null."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    stop_reason: str | None = Field(
        default=None, description="The provider's finish/stop reason (tool_calls, stop, length, end_turn, ...).")
    price_version: str | None = Field(
        default=None, description="Date of the price file cost_usd was computed from (tasks/selectors/providers/prices).")
    route: RouteDesign | None = Field(
        default=None, description="Routing design of the arm: default / forced / gated / narrowed; null if unrouted.")
    router: str | None = Field(default=None, description="Decision model as 'kind:model' (lexical, embedding, llm).")
    router_pick: str | None = Field(default=None, description="The decision model's pick (a tool or 'none').")
    router_confidence: float | None = Field(
        default=None, description="The decision model's confidence in its pick, 0..1 (the gate compares this).")
    router_probabilities: dict[str, float] | None = Field(
        default=None, description="The decision model's probability per offered tool and 'none'. "
        "`confidence`/`probabilities` stay the final selector's own (null for a chat model's pick).")
    router_latency_ms: float | None = Field(default=None, description="Wall time of the decision model's part.")
    router_cost_usd: float | None = Field(
        default=None, description="Cost of the decision model's call (included in cost_usd, the cost per turn).")
    decided_by: Literal["router", "chat"] | None = Field(
        default=None, description="Whose choice the row scores: the decision model's (forced, gated above the "
        "threshold) or the chat model's (default, narrowed, gated fallback).")
    fallback: bool | None = Field(
        default=None, description="Gated arms: the router was below the threshold (or failed) and the chat model chose.")
    judge_verdict: Literal["right", "wrong", "unsure"] | None = Field(
        default=None, description="LLM judge's majority verdict on the chosen tool (beside the label check `correct`).")
    judge_votes: list[str] | None = Field(default=None, description="The judge's votes: right / wrong / unsure each.")
    judge_cost_usd: float | None = Field(default=None, description="Cost of the judge's calls (not part of cost_usd).")
    arguments: str | None = Field(
        default=None, description="Arguments of the first tool call as the model sent them (compact JSON when they "
        "parsed, else the raw text), the ones checked against the tool's schema.")
    http_attempts: int | None = Field(
        default=None, description="HTTP requests sent for this turn: every call's first request (router, chat, "
        "judge) plus its retries (0 on a row served from the cache); null for offline selectors.")
    chat_n_tools: int | None = Field(
        default=None, description="Tools sent to the chat model in its request: the decision model's shortlist on "
        "a narrowed arm, n_tools otherwise; null for offline selectors and when no chat call was made.")
    n_tool_calls: int | None = Field(
        default=None, description="Tool calls in the chat model's reply (the first is scored; 0 for a text reply).")
    cached_input_tokens: int | None = Field(
        default=None, description="Prompt tokens read from the provider's prompt cache (within input_tokens, priced "
        "at the cached rate).")
    cache_write_tokens: int | None = Field(
        default=None, description="Prompt tokens written to the provider's cache (within input_tokens; Anthropic, "
        "billed 1.25x for 5 minutes, 2x for 1 hour).")
    sent_as: SentAs | None = Field(
        default=None, description="How the chat request went to the provider: 'call' (a synchronous call), "
        "'batch' (a request of a provider batch, costed at the batch price) or 'call_after_batch' (its batch "
        "request errored or expired, so it was sent again as a call; that attempt counts in retries and "
        "http_attempts); null for offline selectors and rows not sent. A batch row's request counts as one HTTP "
        "attempt, and its latency_ms is its unit's wait for its batches.")
    batch_id: str | None = Field(
        default=None, description="The provider's id of the batch the request was sent in ('batch' and "
        "'call_after_batch' rows), else null.")
    served_model_evidence: Literal["reported", "not_reported", "echoes_request"] | None = Field(
        default=None, description="What the reply proves about the model that answered: 'reported' (an id the "
        "pin check compared), 'not_reported' (no model in the reply), 'echoes_request' (a self-hosted server "
        "returned the id requested, which proves nothing).")


class ExampleDistance(BaseModel):
    """How far a request is from the labelled examples a kNN-using selector or router (``trained``) looks up."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    nearest_example_cos: float | None = Field(
        default=None, description="Cosine of the request to its most similar labelled example (any label) that "
        "the trained decision model (the arm's selector or its router) looked up; low = far from what it learned "
        "from (out of its domain). Null for selectors that use no examples, refused rows and older files.")


class Selection(ExampleDistance, HostedTurn):
    """What a selector answered for one request under one tool order (no run context: cacheable)."""

    request_id: str = Field(description="The request answered.")
    chosen: str | None = Field(description="Tool chosen, 'none' for no tool, null when there was no usable answer.")
    outcome_hint: Literal["ok", "invalid", "error", "empty"] = Field(
        default="ok", description="The selector's own verdict on its reply before scoring."
    )
    confidence: float | None = Field(default=None, description="The selector's confidence in its pick, 0..1.")
    probabilities: dict[str, float] | None = Field(default=None, description="Probability per offered tool (and 'none').")
    detail: str | None = Field(default=None, description="Why a reply was invalid, empty or an error (no secrets).")
    input_tokens: int | None = Field(default=None, description="Prompt tokens billed.")
    output_tokens: int | None = Field(default=None, description="Completion tokens billed.")
    cost_usd: float | None = Field(default=None, description="Cost of the call from the price file.")
    latency_ms: float = Field(description="Wall time of the selection of this request.")
    served_model_id: str | None = Field(default=None, description="Model id as the provider reported it.")
    retries: int = Field(default=0, description="Retries spent on this request.")


class _ScoredSelection(UnitRow):
    """The columns of a selection row before its hosted turn's (``SelectionRow``)."""

    request_id: str = Field(description="Labelled request id.")
    slice: str = Field(description="Slice of the request; slices are never averaged into one figure.")
    intent: str | None = Field(description="Intent tag of the request.")
    label_status: Literal["adjudicated", "provisional"] = Field(description="Whether the label was decided by a person.")
    catalogue: str = Field(description="Catalogue name of the arm ('per_request' for BFCL-style sets).")
    tool_set_id: str = Field(description="Id of the set of tools offered (see the offered_tools table).")
    n_tools: int = Field(description=(
        "Number of tools in the request's offered set (tool_set_id: the arm's catalogue or the request's own, in "
        "the seed's order that expected_position counts in). A routed arm's chat model may be sent fewer: "
        "chat_n_tools."))
    expected: str = Field(description="The right tool for this arm's offered tools, or 'none', named as the arm "
                                      "offers it (a catalogue's prefix or rename: `offered_as`).")
    label: str | None = Field(default=None, description=(
        "The same answer named as the version labels it ('none' included): equals expected unless the arm's "
        "catalogue offers the tool under another name (`git_status` where expected is `git.git_status`). "
        "Comparisons across arms and production weights match on it; null on rows landed before it existed "
        "(read coalesce(label, expected))."))
    expected_position: int | None = Field(description="1-based position of the expected tool in the permuted order.")
    chosen: str | None = Field(description="Tool chosen, 'none' when no tool was called, null when no usable answer.")
    correct: bool = Field(description="chosen equals expected (never true for invalid, error or empty rows).")
    outcome: Outcome = Field(description="correct / wrong_tool / no_tool / invalid / error / empty.")
    pair: str | None = Field(description="'expected -> chosen' when wrong_tool or no_tool, else null.")
    invalid: bool = Field(description="The reply was not a valid call of an offered tool.")
    error: bool = Field(description="The selector failed after its retries.")
    empty: bool = Field(description="The reply was empty or unfinished.")
    confidence: float | None = Field(description="Selector confidence in its pick, 0..1, where it gives one.")
    probabilities: dict[str, float] | None = Field(description="Probability per offered tool, where given.")
    detail: str | None = Field(description="Why a row is invalid, empty or an error.")
    input_tokens: int | None = Field(description="Prompt tokens billed.")
    output_tokens: int | None = Field(description="Completion tokens billed.")
    cost_usd: float | None = Field(description="Cost of the call in US dollars.")
    latency_ms: float = Field(description="Selection wall time for this request in milliseconds.")
    model_id: str = Field(description="Pinned model id of the arm.")
    served_model_id: str | None = Field(description="Model id as served (reported by the provider).")
    selector: str = Field(description="Selector kind.")
    prompt: str = Field(description="Prompt name of the arm.")
    cache_hit: bool = Field(description="The selection came from the cache: no model call was made.")
    retries: int = Field(description="Retries spent on this request.")


class ArgumentOutcome(BaseModel):
    """One parameter's outcome in a scored call."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    parameter: str = Field(description="The parameter, as the tool's schema (or the call) names it.")
    outcome: ArgumentOutcomeKind = Field(description="right / wrong_value / missing_required / "
                                         "missing_expected_optional / extra_allowed / hallucinated / wrong_type.")


class ScoredArguments(BaseModel):
    """How a row's arguments scored against the request's expected arguments."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    arguments_correct: bool | None = Field(
        default=None, description="Every parameter outcome is right or extra_allowed. Scored when the expected "
        "tool was called, also when its arguments broke its schema (outcome 'invalid'). Null = not scored (another "
        "tool or none, the selector gives no arguments, or the request has no expected arguments): never counted "
        "right.")
    argument_outcomes: list[ArgumentOutcome] | None = Field(
        default=None, description="One outcome per parameter sent or expected (a parameter that may be "
        "omitted and was, or is expected absent and was, is not listed); null when not scored.")


class SelectionRow(ScoredArguments, ExampleDistance, HostedTurn, _ScoredSelection):
    """One row per (run, arm, seed, request): the grain every report is a GROUP BY over."""


class SelectionRunRecord(RunRecord):
    """One registered selection run: the table ``runs``."""

    n_rows: int = Field(description="Rows registered.")
    weights_window: str | None = Field(description="Production weights window used for the weighted figures.")


class SelectionArmRecord(ArmRecord):
    """One arm of a selection run: the table ``arms``."""

    catalogue: str = Field(description="Catalogue name.")
    catalogue_hash: str = Field(description="sha256 of the resolved catalogue (tools, descriptions, parameters).")
    selector: str = Field(description="Selector kind.")
    abstain_rule: str | None = Field(
        default=None,
        description="How the offline router's 'none' cut-off was set: 'default', 'option: <t>', 'fitted <file> "
        "(sha256 <12 hex>; fitted on <taskset> <version>, hash <12 hex of its content hash>): <t>' ('margin <t>' "
        "in place of '<t>': a trained model's margin over its learned 'none'; ', temperature <T>' after it when "
        "the file holds a fitted temperature), or 'never ...' (no cut-off on a version without 'none' labels); "
        "null for arms without an offline router.")
    decision_model_hash: str | None = Field(
        default=None, description="sha256 of the trained decision model's file the arm (or its router) used.")
    far_cutoff: float | None = Field(
        default=None, description="That model file's far cut-off: a row whose nearest_example_cos is below it is "
        "far from every example the model learned from (out of its domain); null without a trained model or "
        "for a file that records none.")


class OfferedTool(BaseModel):
    """Membership of a tool in an offered tool set: the table ``offered_tools``."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    tool_set_id: str = Field(description="Id of the tool set (sha256 of its sorted names, shortened).")
    tool: str = Field(description="A tool in the set.")


class SeedOrder(UnitKey):
    """Where a tool stands in a seed's recorded permutation: the table ``seed_orders``."""

    tool: str = Field(description="A tool of the arm's catalogue.")
    position: int = Field(description="1-based position of the tool in the permuted catalogue.")


class WeightRecord(BaseModel):
    """A tool's share of live traffic in a window: the table ``production_weights``."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    taskset: str = Field(description="Task-set name.")
    window_id: str = Field(description="Window id (the weights file stem).")
    tool: str = Field(description="Tool name.")
    weight: float = Field(description="Share of traffic, 0..1.")
