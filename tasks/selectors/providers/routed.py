"""Routing designs: how a decision model and a chat model share the choice of tool.

Designs (``options.route`` of an openai / anthropic arm):

- ``default``: the chat model picks among all tools (a router, if named, is run and recorded only);
- ``forced``: the decision model picks, and the chat model is constrained to that tool (``tool_choice``;
  a pick of 'none' sends ``tool_choice: none``) — the chat model supplies the arguments;
- ``gated``: the decision model's pick is forced when its confidence >= ``threshold``; otherwise the
  chat model picks among all tools (a *fallback*);
- ``narrowed``: the chat model sees only the decision model's top ``narrow_k`` tools (default 1; 'none'
  among them offers nothing in its place) and chooses between them and no tool.

If the decision model fails (no usable answer), every design falls back to the chat model over all tools
and the row says so (``fallback``). The row scores what the chat model actually called; ``decided_by``
says whose choice that was.

Decision models (``options.router``):

- ``lexical`` / ``embedding``: the offline routers, run over the whole batch at once; they return a
  probability per offered tool and 'none', and a confidence (``router_model``, ``router_options`` go to
  them);
- ``llm``: an OpenAI-compatible chat model asked to answer with the *index* of one option (tools in the
  seed's order, then 'none'), one output token, with ``logprobs`` / ``top_logprobs``. The probability of
  option i is exp(logprob) of the token "i" among the returned alternatives (spellings of one index are
  summed), normalised over the offered options; options outside the alternatives get 0 (the API returns
  at most 20). Its confidence is the top probability.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from schemas.catalogue import NONE_LABEL, ToolSpec
from schemas.selection.rows import Selection
from tasks.selectors.base import SelectionInput
from tasks.selectors.providers.call_budget import RunLedger, Turn
from tasks.selectors.providers.chat_types import ChatRequest
from tasks.selectors.offline import DEFAULT_MODELS, offline_selector
from tasks.selectors.providers.provider_calls import CallResult, ProviderCaller

MAX_TOP_LOGPROBS = 20

ROUTER_SYSTEM = (
    "You route a customer's request to the one option that should handle it first. Read the conversation "
    "and the numbered options, then answer with the number of the best option and nothing else."
)


@dataclass(frozen=True)
class RouterResult:
    pick: str | None
    """A tool name or 'none'; None when the router gave no usable answer."""
    confidence: float | None = None
    probabilities: dict[str, float] | None = None
    latency_ms: float = 0.0
    cost_usd: float | None = None
    retries: int = 0
    detail: str | None = None
    sent: bool = True
    nearest_example_cos: float | None = None
    """A trained router's: the cosine of the request's nearest labelled example (schemas ExampleDistance)."""

    @property
    def ok(self) -> bool:
        return self.pick is not None


@dataclass(frozen=True)
class Decision:
    """What the chat model is sent, and whose choice the row will score."""

    tools: tuple[ToolSpec, ...]
    tool_choice: str | None
    """None (the model decides), 'none', or the tool name forced."""
    decided_by: str
    fallback: bool


def decide(route: str, router: RouterResult | None, tools: tuple[ToolSpec, ...], threshold: float | None = None,
           narrow_k: int = 1) -> Decision:
    """The decision for one request under one design."""
    if route == "default" or router is None:
        return Decision(tools, None, "chat", False)
    if not router.ok:
        return Decision(tools, None, "chat", True)
    if route == "forced" or (route == "gated" and (router.confidence or 0.0) >= float(threshold or 0.0)):
        return Decision(tools, router.pick, "router", False)
    if route == "gated":
        return Decision(tools, None, "chat", True)
    if route == "narrowed":
        probabilities = router.probabilities or {router.pick: 1.0}
        order = {tool.name: i for i, tool in enumerate(tools)}
        ranked = sorted(probabilities.items(), key=lambda kv: (-kv[1], order.get(kv[0], len(order))))
        keep = {label for label, _ in ranked[:narrow_k]}
        if router.pick not in keep:  # the pick always stays offered
            keep.add(router.pick)
        return Decision(tuple(t for t in tools if t.name in keep), None, "chat", False)
    raise ValueError(f"unknown route '{route}'")


# -- offline decision models -------------------------------------------------------------------------------

class OfflineRouter:
    """The lexical / embedding selector as a decision model, run over the whole batch at once."""

    def __init__(self, kind: str, model_id: str | None, options: Mapping[str, Any]):
        self.kind = kind
        self.model_id = model_id or DEFAULT_MODELS[kind]
        self.selector = offline_selector(kind, self.model_id, dict(options))

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.model_id}"

    def route_batch(self, batch: Sequence[SelectionInput]) -> list[RouterResult]:
        return [self._result(s) for s in self.selector.select(list(batch))]

    @staticmethod
    def _result(selection: Selection) -> RouterResult:
        if selection.outcome_hint != "ok" or selection.chosen is None:
            return RouterResult(None, latency_ms=selection.latency_ms, detail=selection.detail or "no router pick")
        return RouterResult(selection.chosen, selection.confidence, selection.probabilities,
                            latency_ms=selection.latency_ms, nearest_example_cos=selection.nearest_example_cos)


# -- the LLM decision model ------------------------------------------------------------------------------

def option_labels(tools: Sequence[ToolSpec]) -> list[str]:
    """Options in the order shown to the LLM router: the tools in the seed's order, then 'none'."""
    return [tool.name for tool in tools] + [NONE_LABEL]


def router_prompt(item: SelectionInput, tools: Sequence[ToolSpec]) -> str:
    conversation = "\n".join(f"{m.role}: {m.content}" for m in item.messages)
    lines = [f"{i}. {tool.name}: {' '.join(tool.description.split())}" for i, tool in enumerate(tools, start=1)]
    lines.append(f"{len(tools) + 1}. none: no option fits; answer the customer in plain text without a tool")
    return (f"Conversation:\n{conversation}\n\nOptions:\n" + "\n".join(lines) +
            f"\n\nAnswer with one number from 1 to {len(tools) + 1}.")


def probabilities_from_logprobs(top: Sequence[tuple[str, float]] | None, labels: Sequence[str]
                                ) -> dict[str, float] | None:
    """Option probabilities from the first token's alternatives, normalised over the offered options."""
    if not top:
        return None
    mass = dict.fromkeys(labels, 0.0)
    for token, logprob in top:
        text = token.strip().rstrip(".):")
        if text.isdigit() and 1 <= int(text) <= len(labels) and math.isfinite(logprob):
            mass[labels[int(text) - 1]] += math.exp(logprob)
    total = sum(mass.values())
    if total <= 0:
        return None
    return {label: value / total for label, value in mass.items()}


class LLMRouter:
    """A chat model read through its token log-probabilities over one option index."""

    def __init__(self, model_id: str, options: Mapping[str, Any]):
        self.model_id = model_id
        self.options = dict(options)
        self.max_options = int(self.options.get("max_options", MAX_TOP_LOGPROBS))
        self.caller = ProviderCaller("openai", model_id, {k: v for k, v in self.options.items() if k != "max_options"})

    @property
    def label(self) -> str:
        return f"llm:{self.model_id}"

    def request(self, item: SelectionInput) -> ChatRequest:
        labels = option_labels(item.tools)
        return ChatRequest(
            model=self.model_id, system=ROUTER_SYSTEM, messages=(("user", router_prompt(item, item.tools)),),
            max_tokens=1, top_logprobs=max(1, min(self.max_options, MAX_TOP_LOGPROBS, len(labels))),
        )

    def route(self, item: SelectionInput, ledger: RunLedger, turn: Turn | None = None) -> RouterResult:
        started = time.perf_counter()
        result = self.caller.call(self.request(item), ledger, turn)
        return self.read(item, result, result.latency_ms or (time.perf_counter() - started) * 1000)

    def read(self, item: SelectionInput, result: CallResult, latency: float) -> RouterResult:
        """The router's result from its call (or its batch line, read as a call)."""
        labels = option_labels(item.tools)
        if not result.ok:
            return RouterResult(None, latency_ms=latency, cost_usd=result.cost_usd, retries=result.retries,
                                detail=f"router: {result.detail}", sent=result.sent)
        probabilities = probabilities_from_logprobs(result.reply.top_logprobs, labels)
        if probabilities is None:
            return RouterResult(None, latency_ms=latency, cost_usd=result.cost_usd, retries=result.retries,
                                detail="router: no option index among the returned log-probabilities")
        pick = max(labels, key=lambda label: (probabilities[label], -labels.index(label)))
        return RouterResult(pick, probabilities[pick], probabilities, latency, result.cost_usd, result.retries)


def build_router(options: Mapping[str, Any]) -> OfflineRouter | LLMRouter | None:
    router = options.get("router")
    if router is None:
        return None
    router_options = dict(options.get("router_options") or {})
    if router == "llm":
        return LLMRouter(str(options["router_model"]), router_options)
    return OfflineRouter(str(router), options.get("router_model"), router_options)
