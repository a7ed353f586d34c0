"""The cost a selection run was forecast to have before its first call: the table ``cost_forecasts``, one
row per (run, arm with hosted-model calls). The view ``cost_forecast_error`` sets it against what the arm's
rows were billed."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class CostForecast(BaseModel):
    """One arm's forecast: calls, tokens, dollars and time, sent as calls and as a provider batch."""

    model_config = ConfigDict(extra="forbid", defer_build=True)  # validator built at first use, not by a check

    run_id: str = Field(description="Run the forecast was made for (before its first call).")
    arm: str = Field(description="Arm name.")
    model_id: str = Field(description="Pinned model id of the arm's chat model.")
    source: Literal["history", "estimate"] = Field(
        description="'history': per-row means of past rows of the same model, catalogue and routing in this "
        "warehouse; 'estimate': prompt characters / 4 tokens and a fixed reply size (no such rows yet).")
    past_rows: int = Field(description="Past rows the history means came from (0 for an estimate).")
    rows: int = Field(description="Rows planned for the arm: its requests under every seed.")
    calls: int = Field(description="HTTP requests forecast (router, chat and judge calls; retries as in history).")
    input_tokens: int = Field(description="Prompt tokens forecast for the chat model's calls.")
    output_tokens: int = Field(description="Completion tokens forecast for the chat model's calls.")
    usd: float = Field(description="Dollars forecast with every request sent as a synchronous call.")
    batch_usd: float | None = Field(
        description="Dollars forecast with the chat requests sent through the provider's batch API; null when "
        "the price file gives the model no batch price.")
    cached_rows: int = Field(
        default=0, description="Planned rows the result cache answered before the run (not sent); the figures "
        "above are for every planned row.")
    price_version: str = Field(description="Date of the price file (or 'arm options') the dollars come from.")
    concurrency: int | None = Field(
        default=None, description="Calls in flight the arm's endpoint allows (its concurrency option).")
    latency_rows: int | None = Field(
        default=None, description="Past rows of the model sent as calls that call_latency_ms is the median of.")
    call_latency_ms: float | None = Field(
        default=None, description="Median wall time of one HTTP request of those rows; null: no such rows.")
    call_seconds: float | None = Field(
        default=None, description="Wall time forecast for the calls the run sends, at the arm's concurrency "
        "(rounds of calls x call_latency_ms); null: unknown, no past rows.")
    past_batches: int | None = Field(
        default=None, description="Past batches of the model that batch_wait_s is the median wait of.")
    batch_wait_s: float | None = Field(
        default=None, description="Median wait of past batches of the model; null: none (a batch ends within "
        "the provider's 24 h window).")
