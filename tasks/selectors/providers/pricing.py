"""Cost per call from tokens, with prices from a versioned, dated price file.

``prices/<YYYY-MM-DD>.yaml`` holds US dollars per million tokens (input, cached input, output) per
pinned model id, effective from the file's date. A run uses the newest file dated on or before today
(or the one an arm names with ``options.price_file``), and every row records that date in
``price_version``, so a cost can always be traced to the price it was computed from.

Prompt-cache tokens have their own rates: reads at ``cached_input`` (the input price when the file gives
none), Anthropic's cache writes at 1.25x the input price for the 5-minute lifetime and 2x for the 1-hour one
(its pricing page; ``cache_write`` / ``cache_write_1h`` override them). A call whose reply gave no token
counts has an unknown cost: ``cost_or_none`` returns None, never 0.

A model's entry may carry a ``batch`` price: the same request sent through the provider's batch API
(OpenAI's Batch API, Anthropic's Message Batches), about half the standard price. ``price_for(..., batch=True)``
returns it; a model with no batch price in the file is refused for batch, never priced at the standard rate.

An arm can state its own price instead (``options.prices: {input: .., output: ..}``, e.g. 0 for a
self-hosted server behind ``base_url``). A model with no price is refused before any call: the spend cap
cannot work without one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import yaml

PRICES_DIR = Path(__file__).resolve().parent / "prices"
PER = 1_000_000


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million tokens for one model."""

    input: float
    output: float
    cached_input: float | None = None
    version: str = "arm options"
    """Date of the price file, or 'arm options' for a price stated on the arm."""
    cache_write: float | None = None
    """Per million prompt tokens written to a 5-minute cache; None: 1.25x ``input``."""
    cache_write_1h: float | None = None
    """Per million prompt tokens written to a 1-hour cache; None: 2x ``input``."""
    tier: str = "standard"
    """'standard' (a synchronous call) or 'batch' (the provider's batch API)."""

    def cost(self, input_tokens: int | None, output_tokens: int | None, cached_input_tokens: int | None = 0,
             cache_write_tokens: int | None = 0, cache_write_1h_tokens: int | None = 0) -> float:
        """Cost of one call. ``input_tokens`` counts every prompt token, cache reads and writes included."""
        input_tokens, output_tokens = input_tokens or 0, output_tokens or 0
        cached = min(cached_input_tokens or 0, input_tokens)
        write_1h = min(cache_write_1h_tokens or 0, input_tokens - cached)
        write_5m = min(cache_write_tokens or 0, input_tokens - cached - write_1h)
        cached_price = self.input if self.cached_input is None else self.cached_input
        write_price = 1.25 * self.input if self.cache_write is None else self.cache_write
        write_1h_price = 2.0 * self.input if self.cache_write_1h is None else self.cache_write_1h
        fresh = input_tokens - cached - write_5m - write_1h
        return (fresh * self.input + cached * cached_price + write_5m * write_price + write_1h * write_1h_price
                + output_tokens * self.output) / PER

    def cost_or_none(self, input_tokens: int | None, output_tokens: int | None, cached_input_tokens: int | None = 0,
                     cache_write_tokens: int | None = 0, cache_write_1h_tokens: int | None = 0) -> float | None:
        """``cost``, or None when the reply reported no token counts (a missing usage): unknown, not free."""
        if input_tokens is None or output_tokens is None:
            return None
        return self.cost(input_tokens, output_tokens, cached_input_tokens, cache_write_tokens, cache_write_1h_tokens)


@dataclass(frozen=True)
class PriceFile:
    path: Path
    effective: str
    models: Mapping[str, ModelPrice]
    batch_models: Mapping[str, ModelPrice] = field(default_factory=dict)
    """The batch price of the models whose entry gives one."""


def _price(raw: Any, version: str, where: str, tier: str = "standard") -> ModelPrice:
    if not isinstance(raw, Mapping) or "input" not in raw or "output" not in raw:
        raise ValueError(f"{where}: a price needs 'input' and 'output' (USD per million tokens)")
    values = {k: raw.get(k) for k in ("input", "output", "cached_input", "cache_write", "cache_write_1h")}
    for key, value in values.items():
        if value is not None and (not isinstance(value, (int, float)) or value < 0):
            raise ValueError(f"{where}: {key} must be a number >= 0")
    return ModelPrice(**{k: None if v is None else float(v) for k, v in values.items()}, version=version, tier=tier)


def _batch_price(raw: Any, version: str, where: str) -> ModelPrice | None:
    if not isinstance(raw, Mapping) or raw.get("batch") is None:
        return None
    return _price(raw["batch"], version, f"{where}: batch", tier="batch")


@lru_cache(maxsize=None)
def load_price_file(path: Path) -> PriceFile:
    data = yaml.safe_load(Path(path).read_text())
    effective = str(data.get("effective", ""))
    if effective != Path(path).stem:
        raise ValueError(f"{path}: 'effective' ({effective}) must equal the file's name (its date)")
    raw_models = data.get("models") or {}
    models = {str(model): _price(raw, effective, f"{path}: {model}") for model, raw in raw_models.items()}
    batch = {str(model): _batch_price(raw, effective, f"{path}: {model}") for model, raw in raw_models.items()}
    return PriceFile(path=Path(path), effective=effective, models=models,
                     batch_models={model: price for model, price in batch.items() if price is not None})


def price_files(directory: Path = PRICES_DIR) -> list[Path]:
    return sorted(directory.glob("????-??-??.yaml"))


def current_price_file(on: date | None = None, directory: Path = PRICES_DIR) -> PriceFile:
    """The newest price file effective on ``on`` (default: today)."""
    on = on or date.today()
    eligible = [p for p in price_files(directory) if p.stem <= on.isoformat()]
    if not eligible:
        raise FileNotFoundError(f"no price file in {directory} dated on or before {on}")
    return load_price_file(eligible[-1])


def price_for(model_id: str, options: Mapping[str, Any] | None = None, batch: bool = False,
              directory: Path = PRICES_DIR) -> ModelPrice:
    """The price of ``model_id`` for an arm: ``options.prices`` if stated, else the price file's.

    ``batch``: the price of the provider's batch API (``options.prices.batch`` when the arm states its price).
    Raises KeyError (model not priced, or no batch price) or FileNotFoundError (price file named but missing)."""
    options = options or {}
    if options.get("prices") is not None:
        stated = options["prices"]
        if not batch:
            return _price(stated, "arm options", f"options.prices of {model_id}")
        price = _batch_price(stated, "arm options", f"options.prices of {model_id}")
        if price is None:
            raise KeyError(f"{model_id} has no batch price: set options.prices.batch: "
                           "{input: <USD per 1M>, output: <USD per 1M>}")
        return price
    if options.get("price_file"):
        path = directory / f"{options['price_file']}.yaml"
        if not path.is_file():
            raise FileNotFoundError(f"price file {path} not found")
        prices = load_price_file(path)
    else:
        prices = current_price_file(directory=directory)
    if model_id not in prices.models:
        raise KeyError(f"{model_id} has no price in {prices.path.name}; add it to a new dated price file or set "
                       "options.prices: {input: <USD per 1M>, output: <USD per 1M>}")
    if not batch:
        return prices.models[model_id]
    if model_id not in prices.batch_models:
        raise KeyError(f"{model_id} has no batch price in {prices.path.name}; add it to a new dated price file "
                       "or send it synchronously")
    return prices.batch_models[model_id]
