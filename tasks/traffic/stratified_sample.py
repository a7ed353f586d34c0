"""A stratified sample of a window's distinct requests, one stratum per first tool (and 'none').

Allocation: every stratum first gets its floor (``floor_per_tool``, ``floor_none``); the rest of ``size``
goes to the strata in proportion to their production volume, so the highest-volume tools are sampled the
most. Or, when the plan carries ``targets`` (a count per tool), each stratum gets its target; or, with
``target_half_width``, every tool with real volume gets the requests the sample-size planner needs for
that interval width. Never less than the floor. No stratum gets more than the distinct requests it has; what it cannot use
goes to the others (water-filling, largest remainders).

Draw: inside a stratum, requests are drawn without replacement with probability proportional to how often
their text occurred (Efraimidis-Spirakis keys from a seeded generator), skipping near-duplicates of
earlier versions and of requests already drawn, and any second request with the same user text.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from dataclasses import dataclass

import numpy as np

from schemas.catalogue import NONE_LABEL
from schemas.taskset import Message
from schemas.traffic import ProductionTurn, SamplingPlan
from tasks.traffic.near_duplicates import NearDuplicateIndex, conversation_text, normalise
from tasks.stats.planner import plan as plan_figure


@dataclass(frozen=True)
class Candidate:
    """One distinct (masked) request of the window and what production did with it."""

    key: str
    turn: ProductionTurn
    """The earliest turn with this text: its id, time and signals go into the labelling queue."""
    occurrences: int
    hint_counts: dict[str, int]

    @property
    def hint(self) -> str:
        """The first tool production called most often for this text (ties: alphabetical)."""
        return min(self.hint_counts.items(), key=lambda item: (-item[1], item[0]))[0]

    @property
    def messages(self) -> tuple[Message, ...]:
        return self.turn.earlier_turns + (Message(role="user", content=self.turn.user_message),)

    @property
    def text(self) -> str:
        return conversation_text(self.messages)

    @property
    def review_first(self) -> bool:
        turn = self.turn
        return bool(turn.user_retried or turn.handed_to_human or turn.empty_reply or len(self.hint_counts) > 1)


def user_text_key(text: str) -> str:
    """The label checks' notion of 'the same request text' (case and spacing ignored)."""
    return " ".join(text.lower().split())


def distinct_candidates(turns: list[ProductionTurn]) -> list[Candidate]:
    """One candidate per normalised conversation, in the order of their earliest turn."""
    first: dict[str, ProductionTurn] = {}
    occurrences: Counter[str] = Counter()
    hints: dict[str, Counter[str]] = {}
    for turn in sorted(turns, key=lambda t: (t.time, t.turn_id)):
        key = normalise(conversation_text(turn.earlier_turns + (Message(role="user", content=turn.user_message),)))
        first.setdefault(key, turn)
        occurrences[key] += 1
        hints.setdefault(key, Counter())[turn.first_tool] += 1
    return [Candidate(key=key, turn=turn, occurrences=occurrences[key], hint_counts=dict(sorted(hints[key].items())))
            for key, turn in first.items()]


def _largest_remainder(amount: int, weights: dict[str, float]) -> dict[str, int]:
    total = sum(weights.values())
    quotas = {s: amount * w / total for s, w in weights.items()}
    shares = {s: math.floor(q) for s, q in quotas.items()}
    left = amount - sum(shares.values())
    for s in sorted(quotas, key=lambda s: (-(quotas[s] - shares[s]), -weights[s], s))[:left]:
        shares[s] += 1
    return shares


def allocate(volumes: dict[str, int], available: dict[str, int], plan: SamplingPlan) -> dict[str, int]:
    """Target count per stratum (may exceed what is available: the draw reports the shortfall)."""
    floors = {s: plan.floor_none if s == NONE_LABEL else plan.floor_per_tool for s in volumes}
    if plan.targets is not None:
        return {s: max(plan.targets.get(s, 0), floors[s]) for s in volumes}
    if plan.target_half_width is not None:
        needed = plan_figure(plan.planner_accuracy, 1, target_half_width=plan.target_half_width).requests_for_target
        total = sum(volumes.values()) or 1
        return {s: max(needed if volumes[s] / total >= plan.planner_min_share else 0, floors[s]) for s in volumes}
    extra = {s: 0 for s in volumes}
    capacity = {s: max(available.get(s, 0) - floors[s], 0) for s in volumes}
    remaining = plan.size - sum(min(floors[s], available.get(s, 0)) for s in volumes)
    open_strata = {s for s in volumes if capacity[s] > 0 and volumes[s] > 0}
    while remaining > 0 and open_strata:
        shares = _largest_remainder(remaining, {s: float(volumes[s]) for s in open_strata})
        for s, share in shares.items():
            give = min(share, capacity[s] - extra[s])
            extra[s] += give
            remaining -= give
            if extra[s] >= capacity[s]:
                open_strata.discard(s)
    return {s: floors[s] + extra[s] for s in volumes}


@dataclass(frozen=True)
class Draw:
    chosen: dict[str, list[Candidate]]
    near_duplicates_skipped: int


def draw(by_stratum: dict[str, list[Candidate]], targets: dict[str, int], seed: int,
         seen: NearDuplicateIndex) -> Draw:
    """Draw each stratum (in name order) up to its target; ``seen`` holds the earlier versions' texts."""
    chosen: dict[str, list[Candidate]] = {}
    user_texts: set[str] = set()
    skipped = 0
    for stratum in sorted(targets):
        pool = by_stratum.get(stratum, [])
        picked: list[Candidate] = []
        if pool and targets[stratum] > 0:
            rng = np.random.default_rng([seed, zlib.crc32(stratum.encode())])
            weights = np.array([c.occurrences for c in pool], dtype=np.float64)
            keys = np.log(rng.random(len(pool))) / weights
            for index in np.argsort(-keys, kind="stable"):
                candidate = pool[int(index)]
                user_key = user_text_key(candidate.turn.user_message)
                if user_key in user_texts:
                    continue
                if seen.similar(candidate.text):
                    skipped += 1
                    continue
                picked.append(candidate)
                user_texts.add(user_key)
                seen.add(candidate.text)
                if len(picked) >= targets[stratum]:
                    break
        chosen[stratum] = picked
    return Draw(chosen=chosen, near_duplicates_skipped=skipped)
