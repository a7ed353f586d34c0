"""A simulation of position sensitivity, not a model: an offline router whose pick moves with the tool order.

Offline routers are order-blind (every seed gives the same answer); real models are not (their pick moves
with the order the tools are offered in). This selector (``selector: position_biased``) puts a known amount
of that sensitivity on top of an order-blind base router, so runs, reports, gates and ``tooleval compare``
can be checked in the regime real models live in, against a figure computed by hand.

The rule. The base router (``base``: ``lexical`` or ``embedding``, with ``base_options``) picks tool ``b``,
offered at 1-based position ``k`` of ``n`` in the seed's order. With probability

    q(k, n) = bias * (k - 1) / (n - 1)

the selector answers the first-offered tool instead (a tool offered first is never moved; one offered last
is moved with probability ``bias``). A base pick of 'none' (or no answer) is kept. The draw is a number in
[0, 1) from the sha256 of the conversation and the tool names in the order offered, so a rerun, a resumed
run and the selection cache (whose key holds the options, the messages and the tools in their order) agree.
The two tools' probabilities are swapped with the pick, so the pick stays the most probable option.

The true effect. Over the orders a seed can draw (every order of the offered tools equally likely), a
request's chance of being answered right is (``expected_accuracy``):

- the base picks the right tool: ``1 - bias / 2`` (``q`` averages ``bias / 2`` over the ``n`` positions);
- the base picks a wrong tool and the right answer is a tool: ``bias / (2 (n - 1))`` (the right tool is
  offered first with probability ``1 / n``; the base's pick then sits at one of the other ``n - 1``
  positions, where ``q`` averages ``bias * n / (2 (n - 1))``);
- otherwise: what the base answers (right when both say 'none', else wrong).

So two arms over the same base router and tools that differ only in ``bias`` differ, in expectation, by
``(bias_2 - bias_1) * mean(-1/2 on requests the base gets right with a tool, 1 / (2 (n - 1)) on requests
where it picks a wrong tool for a tool label, 0 elsewhere)``. One seed draws one order for a whole catalogue,
so a seed's accuracy moves with where the busy tools landed in it: the seeds disagree, as real models' do.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Mapping, Sequence

from schemas.catalogue import NONE_LABEL
from schemas.selection.rows import Selection
from tasks.files.content_hash import sha256_hex
from tasks.selectors.base import SelectionInput

KIND = "position_biased"
BASES = ("lexical", "embedding")
OPTIONS = frozenset({"bias", "base", "base_options"})
DEFAULT_MODEL = "simulated-position-bias"
"""The model id an arm names when it writes none of its own: it names a simulation, never a model."""


def move_probability(position: int, n_tools: int, bias: float) -> float:
    """``q(k, n)``: the chance that a pick offered at ``position`` (1-based) of ``n_tools`` is moved to the first."""
    if n_tools < 2 or position <= 1:
        return 0.0
    return bias * (position - 1) / (n_tools - 1)


def order_draw(messages_json: str, tool_names: Sequence[str]) -> float:
    """A number in [0, 1) fixed by the conversation and the tool order (the content of a selection's cache key)."""
    return int(sha256_hex(json.dumps([messages_json, list(tool_names)]))[:13], 16) / 16**13


def expected_accuracy(base_chosen: str | None, expected: str, n_tools: int, bias: float) -> float:
    """A request's chance of a right answer over uniformly drawn tool orders, given the base router's pick."""
    if base_chosen is None or base_chosen == NONE_LABEL or expected == NONE_LABEL:
        return float(base_chosen == expected)
    if base_chosen == expected:
        return 1.0 - bias / 2.0
    return bias / (2.0 * (n_tools - 1)) if n_tools > 1 else 0.0


def parse_options(options: Mapping[str, Any]) -> tuple[float, str, dict[str, Any]]:
    """(bias, base kind, base options) of an arm, or ValueError saying what is wrong."""
    unknown = sorted(set(options) - OPTIONS)
    if unknown:
        raise ValueError(f"position_biased: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(OPTIONS))}")
    bias = options.get("bias")
    if isinstance(bias, bool) or not isinstance(bias, (int, float)) or not 0.0 <= bias <= 1.0:
        raise ValueError(f"position_biased needs `bias:` a number from 0 to 1 (the chance a pick offered last is "
                         f"moved to the first-offered tool), got {bias!r}")
    base = options.get("base", "lexical")
    if base not in BASES:
        raise ValueError(f"position_biased: base must be one of {', '.join(BASES)}, got {base!r}")
    base_options = options.get("base_options") or {}
    if not isinstance(base_options, dict):
        raise ValueError("position_biased: base_options must be a mapping of the base router's options")
    return float(bias), str(base), dict(base_options)


class PositionBiasedSelector:
    """The base router's pick, moved to the first-offered tool with probability ``q(k, n)`` (module docstring)."""

    kind = KIND

    def __init__(self, model_id: str, options: Mapping[str, Any]) -> None:
        from tasks.selectors.routers.base_routers import base_router
        from tasks.selectors.routers.router_setup import DEFAULT_MODELS

        self.model_id = model_id
        self.bias, self.base_kind, base_options = parse_options(options)
        self.base = base_router(self.base_kind, DEFAULT_MODELS[self.base_kind], base_options)

    def move(self, item: SelectionInput, chosen: str | None) -> bool:
        """Whether the base's pick ``chosen`` is moved to the first-offered tool for this input."""
        names = [tool.name for tool in item.tools]
        if chosen is None or chosen not in names:
            return False
        messages_json = json.dumps([m.model_dump(mode="json") for m in item.messages], sort_keys=True)
        return order_draw(messages_json, names) < move_probability(names.index(chosen) + 1, len(names), self.bias)

    def select(self, batch: Sequence[SelectionInput]) -> list[Selection]:
        out = []
        for item, selection in zip(batch, self.base.select(batch)):
            update: dict[str, Any] = {"served_model_id": self.model_id}
            if self.move(item, selection.chosen):
                first, chosen = item.tools[0].name, selection.chosen
                probabilities = dict(selection.probabilities or {})
                if first in probabilities and chosen in probabilities:
                    probabilities[first], probabilities[chosen] = probabilities[chosen], probabilities[first]
                update.update(chosen=first, probabilities=probabilities or None)
            out.append(selection.model_copy(update=update))
        return out


@lru_cache(maxsize=None)
def _cached(model_id: str, options_json: str) -> PositionBiasedSelector:
    return PositionBiasedSelector(model_id, json.loads(options_json))


def position_biased_selector(model_id: str, options: Mapping[str, Any]) -> PositionBiasedSelector:
    """One instance per process and configuration (the base router's model loads once)."""
    return _cached(model_id, json.dumps(dict(options), sort_keys=True))
