"""A task arm: a surface (a toolkit seen through a transform) and the agent that works on it, with its pinned
model. Hosted agents get the selection harness's checks (pinned ids, keys only from the environment, prices,
base_url) before anything runs; the offline baseline agent takes only its own options.

Respects: surface (its hash: file, backend source, tools as offered), prompt, model, agent (its kind and
answer-changing options), version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from schemas.surface.rows import SurfaceArmRecord
from tasks.core_records import ArmContext, ArmRefused, ResolvedArm
from tasks.files.content_hash import sha256_hex
from tasks.selectors.arm_options import answer_options
from tasks.surface.load_surface import ResolvedSurface, load_surface

BASELINE_MODEL = "tooleval-baseline-bm25-1"
"""The model id of the offline baseline agent when an arm names none."""
BASELINE_OPTIONS = frozenset({"router_options", "threshold", "position_bias"})


@dataclass(frozen=True, kw_only=True)
class SurfaceArm(ResolvedArm):
    """A task arm with its surface loaded."""

    instrument = "surface"
    surface: ResolvedSurface
    agent: str

    @property
    def reads_prompt(self) -> bool:
        return self.agent != "baseline"

    @property
    def provider(self) -> str | None:
        from tasks.selectors.providers.chat_options import HOSTED_KINDS

        return self.agent if self.agent in HOSTED_KINDS else None

    @property
    def agent_options(self) -> dict[str, Any]:
        return answer_options(self.options)

    @property
    def agent_options_hash(self) -> str:
        return sha256_hex(json.dumps(self.agent_options, sort_keys=True, default=str))

    def own_respect(self, respect: str) -> Any:
        if respect == "surface":
            return self.surface.surface_hash
        if respect == "agent":
            return json.dumps([self.agent, self.agent_options], sort_keys=True, default=str)
        raise KeyError(respect)


def arm_record(arm: SurfaceArm, common: dict[str, Any]) -> SurfaceArmRecord:
    return SurfaceArmRecord(**common, surface=arm.surface.name, surface_hash=arm.surface.surface_hash,
                            agent=arm.agent, agent_options_hash=arm.agent_options_hash, reads_prompt=arm.reads_prompt,
                            n_tools=len(arm.surface.tools), surface_warnings=list(arm.surface.warnings))


def fill_surface_arm(merged: dict[str, Any]) -> None:
    if merged.get("agent") == "baseline":
        merged.setdefault("model", BASELINE_MODEL)


def agent_problems(agent: str, model: str, options: dict[str, Any]) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """(problems, options with answer-changing defaults filled in) of an arm's agent."""
    if agent == "baseline":
        unknown = sorted(set(options) - BASELINE_OPTIONS)
        if unknown:
            return [("option-known", f"baseline agent: unknown option(s) {', '.join(unknown)}; "
                                     f"known: {', '.join(sorted(BASELINE_OPTIONS))}")], options
        bias = options.get("position_bias", 0.0)
        if isinstance(bias, bool) or not isinstance(bias, (int, float)) or not 0 <= bias <= 1:
            return [("option-known", f"baseline agent: position_bias must be a number from 0 to 1, got {bias!r}")], options
        return [], options
    from tasks.selectors.providers.chat_options import ROUTING_OPTIONS, check_hosted_arm  # a hosted agent's checks

    refused = sorted(set(options) & (ROUTING_OPTIONS | {"judge"}))  # they pick one tool; they do not run an agent
    if refused:
        return [("option-known", f"{', '.join(refused)} choose one tool for a selection; an agent runs the task")], options
    filled, problems = check_hosted_arm(agent, model, options)
    return problems, filled


def resolve_surface_arm(name: str, rung: int, merged: dict[str, Any], context: ArmContext) -> SurfaceArm:
    problems, options = agent_problems(merged["agent"], merged["model"], dict(merged.get("options") or {}))
    if problems:
        raise ArmRefused(problems)
    surface = context.once("surface", merged["surface"], lambda: load_surface(context.taskset_dir, merged["surface"]))
    return SurfaceArm(name=name, rung=rung, surface=surface, prompt_name=merged["prompt"],
                      prompt_text=context.prompt(merged["prompt"]), model_id=merged["model"], agent=merged["agent"],
                      version=merged["version"], options=options)
