"""Results of an unpinned model served from the cache: said at the start and the end of a run, and recorded.

The cache key holds the model id, not what the server behind it runs: a self-hosted server (vLLM, Ollama,
llama.cpp) whose arm runs an undated id with ``unpinned_reason`` can load other weights under the same name,
and the next run is then answered from the cache with what the old weights said. A run cannot tell; it says so
when it happens: a warning naming the arm, how many of its results came from the cache and how to refresh
them (``--no-cache``), and on the arm's record (``unpinned_reason``, ``n_from_cache``, ``unpinned_from_cache``),
which the report shows as a note under the arms. A pinned model (a dated snapshot, a ``model_revision``) and
an offline selector or agent are not flagged: their cached answers are what they would answer again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

if TYPE_CHECKING:  # the report reads notes from records without loading the run's machinery
    from tasks.core_records import ResolvedArm, UnitResult, WorkUnit

Unpinned = Callable[["ResolvedArm"], "str | None"]
"""Why an arm's model is not pinned, None when it is (``Instrument.unpinned``)."""

REFRESH = ("rerun with --no-cache to ask the server again (it neither reads nor fills the cache), or state the "
           "weights in model_revision, which is part of the cache key")


@dataclass(frozen=True)
class ArmCacheUse:
    """How much of one arm's work in a run came from the cache."""

    arm: str
    model_id: str
    unpinned: str | None
    n_items: int
    n_from_cache: int

    @property
    def flagged(self) -> bool:
        """An unpinned model some of whose results came from the cache."""
        return bool(self.unpinned) and self.n_from_cache > 0

    def record_fields(self) -> dict[str, Any]:
        """The arm record's columns (schemas/run_records.py ``ArmRecord``)."""
        return {"unpinned_reason": self.unpinned, "n_items": self.n_items, "n_from_cache": self.n_from_cache,
                "unpinned_from_cache": self.flagged}

    def warning(self, items: str = "results") -> str:
        return unpinned_cache_line(self.arm, self.model_id, self.unpinned or "", self.n_from_cache, self.n_items,
                                   items)


def unpinned_cache_line(arm: str, model_id: str, unpinned: str, n_from_cache: int, n_items: int,
                        items: str = "results") -> str:
    """The warning and the report's note, in the same words."""
    return (f"arm {arm}: model '{model_id}' is not pinned ({unpinned}) and {n_from_cache:,} of its {n_items:,} {items} "
            f"came from the cache: they may predate a change of the server's model; {REFRESH}")


def cache_use(arms: Sequence[ResolvedArm], units: Sequence[WorkUnit], results: Sequence[UnitResult],
              unpinned: Unpinned) -> dict[str, ArmCacheUse]:
    """Arm name -> its cache use in this run (``results`` in the order of ``units``, as the flow collects them);
    ``unpinned``: the instrument's ``Instrument.unpinned``."""
    if len(units) != len(results):
        raise ValueError(f"{len(results)} results for {len(units)} units")
    items: dict[str, int] = {arm.name: 0 for arm in arms}
    cached: dict[str, int] = {arm.name: 0 for arm in arms}
    for unit, result in zip(units, results):
        items[unit.arm.name] += result.n_rows
        cached[unit.arm.name] += result.n_cache_hits
    return {arm.name: ArmCacheUse(arm.name, arm.model_id, unpinned(arm), items[arm.name], cached[arm.name])
            for arm in arms}


def start_warnings(arms: Sequence[ResolvedArm], use_cache: bool, cache_exists: bool, unpinned: Unpinned
                   ) -> list[str]:
    """Before the first unit: the unpinned arms whose results an earlier run may have cached."""
    if not use_cache or not cache_exists:
        return []
    return [f"arm {arm.name}: model '{arm.model_id}' is not pinned ({why}): results an earlier run cached for it "
            f"are used as they are, even if the server's model changed since; {REFRESH}"
            for arm in arms if (why := unpinned(arm))]


def report_notes(arms: Sequence[Mapping[str, Any]], items: str = "results") -> list[str]:
    """The report's note lines under the arms, from the arms' records (registered runs)."""
    return ["Note: " + unpinned_cache_line(a["arm"], a["model_id"], a.get("unpinned_reason") or "",
                                           a.get("n_from_cache") or 0, a.get("n_items") or 0, items)
            for a in arms if a.get("unpinned_from_cache")]
