"""A simulation of position sensitivity, not a model: an offline router whose pick moves with the tool order
(``selector: position_biased``; docs/selection/position-sensitivity.md), so runs, reports, gates and
``tooleval compare`` can be checked in the regime real models live in, against a figure computed by hand.

The base router (``base``: ``lexical`` or ``embedding``, with ``base_options``) picks a tool offered at
1-based position ``k`` of ``n`` in the seed's order. With probability ``q(k, n) = bias * (k - 1) / (n - 1)``
the selector answers the first-offered tool instead; a base pick of 'none' (or no answer) is kept. The draw
is a number in [0, 1) from the sha256 of the conversation and the tool names in the order offered, so a
rerun, a resumed run and the selection cache agree. The two tools' probabilities are swapped with the pick,
so the pick stays the most probable option. ``expected_accuracy`` is the true effect over every order.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from schemas.catalogue import NONE_LABEL
from schemas.selection.rows import Selection
from tasks.files.content_hash import sha256_hex
from tasks.selectors.base import SelectionInput

KIND = "position_biased"
BASES = ("lexical", "embedding")
OPTIONS = frozenset({"bias", "base", "base_options"})


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
        from tasks.selectors.offline import DEFAULT_MODELS, offline_selector

        self.model_id = model_id
        self.bias, self.base_kind, base_options = parse_options(options)
        self.base = offline_selector(self.base_kind, DEFAULT_MODELS[self.base_kind], base_options)

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
