"""Work units of a hosted arm over several seeds, run the way the evaluate flow's thread runner runs them
(``MAX_WORKERS`` units at once, in plan order): shared by the prefix-lane tests and
benchmarks/prefix_cache.py."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from flows.evaluate import MAX_WORKERS
from schemas.catalogue import Catalogue, ToolSpec
from schemas.taskset import LabelledRequest, Message
from tasks.selection.arms import SelectionArm
from tasks.core_records import RunContext, UnitResult, WorkUnit
from tasks.selection.plan_batch import plan_arm_seed
from tasks.selection.select_batch import select_and_land
from tests.factories import SUPPORT
from tests.factories.catalogues import support_tools


def support_requests(n: int) -> tuple[LabelledRequest, ...]:
    return tuple(LabelledRequest(id=f"r{i}", messages=(Message(role="user", content=f"where is order NW-12{i:05d}?"),),
                                 expected="lookup_order", slice="existing") for i in range(n))


def hosted_units(kind: str, model: str, options: dict[str, Any], n_requests: int, seeds: list[int],
                 batch_size: int, tools: tuple[ToolSpec, ...] | None = None) -> list[WorkUnit]:
    """The units of one hosted arm on the support tools (all 30 by default) and its real agent prompt,
    arm by seed by batch, as ``plan_units`` orders them."""
    tools = tools or support_tools()
    arm = SelectionArm(name=kind, rung=1, catalogue_name="support", catalogue=Catalogue(name="support", tools=tools),
                      prompt_name="default", prompt_text=(SUPPORT / "prompts" / "default.md").read_text(),
                      model_id=model, selector=kind, version="v1", options=options)
    requests = support_requests(n_requests)
    return [unit for seed in seeds for unit in plan_arm_seed(arm, seed, requests, "support", batch_size)]


def run_like_the_thread_runner(units: list[WorkUnit], tmp: Path, prefix_lanes: bool = True,
                               run_id: str = "run") -> list[UnitResult]:
    ctx = RunContext(run_id, "exp", tmp / "rows", None, tmp / f"{run_id}-ledger.sqlite", prefix_lanes=prefix_lanes)
    with ThreadPoolExecutor(MAX_WORKERS) as pool:
        return list(pool.map(lambda unit: select_and_land(unit, ctx), units))
