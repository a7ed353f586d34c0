"""An optional LLM judge: a pinned model asked whether the chosen tool was the right first step.

``options.judge: {model: <pinned id>, selector: openai|anthropic, votes: 3, ...}`` on an openai /
anthropic arm. For every row with a choice the judge votes ``votes`` times (independent calls that differ in
the provider seed; OpenAI: temperature 0.7 unless set) and the majority is kept (``unsure`` when there is
none), as ``judge_verdict`` beside the label check: where the judge says *right* but the row is not correct,
the failure lay in the arguments or the reply (or in the label). The judge is shown neither the label nor
the expected arguments. Its calls count against the run's caps; their cost is ``judge_cost_usd``.

The chat call's answer is kept before the judge is asked (``Unjudged``), so a run stopped while the judge
votes repeats, on resume, only the judge's calls.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field

from schemas.catalogue import NONE_LABEL
from schemas.selection.rows import Selection
from tasks.selectors.providers.call_budget import RunLedger, Turn
from tasks.selectors.base import SelectionInput
from tasks.selectors.providers.chat_types import ChatRequest
from tasks.selectors.providers.provider_calls import ProviderCaller

JUDGE_SYSTEM = (
    "You grade the first step an AI support agent took in a conversation. You are given the conversation, "
    "the tools the agent could call, and what the agent did first. Decide whether the agent's CHOICE was "
    "right: the right tool to call, or rightly calling no tool. Judge the choice only, not the argument "
    "values. Answer with one word: right or wrong."
)
VERDICTS = ("right", "wrong")


@dataclass(frozen=True)
class JudgeResult:
    verdict: str
    votes: tuple[str, ...]
    cost_usd: float | None


class Unjudged(BaseModel):
    """A selection whose chat call is done and whose judge has not voted yet: cached apart, keyed like the
    finished selection, so that a resumed run asks only the judge."""

    model_config = ConfigDict(extra="forbid")

    selection: Selection = Field(description="The selection as the chat call (and any router) left it.")
    reply_text: str = Field(description="The chat model's reply text, which the judge's prompt quotes.")


def read_vote(text: str) -> str:
    words = text.strip().lower().split()
    first = words[0].strip(".,:;!*\"'") if words else ""
    return first if first in VERDICTS else "unsure"


def majority(votes: tuple[str, ...]) -> str:
    counts = Counter(votes)
    for verdict in VERDICTS:
        if counts[verdict] * 2 > len(votes):
            return verdict
    return "unsure"


def judge_prompt(item: SelectionInput, chosen: str, arguments: str | None, reply_text: str,
                 as_text: bool = False) -> str:
    """``as_text``: the model wrote the call as text in its reply (tool-call markup its server did not return as
    a structured call: nothing was called), and the judge is told so, with the reply, not that the agent called
    the tool."""
    conversation = "\n".join(f"{m.role}: {m.content}" for m in item.messages)
    tools = "\n".join(f"- {t.name}: {' '.join(t.description.split())}" for t in item.tools)
    if chosen == NONE_LABEL:
        action = f"The agent called no tool and replied: {reply_text.strip()[:1000] or '(nothing)'}"
    elif as_text:
        action = (f"The agent made no tool call: it wrote a call of {chosen} as text in its reply, which was not a "
                  f"structured tool call and was never executed. Its reply: {reply_text.strip()[:1000] or '(nothing)'}")
    else:
        action = f"The agent called {chosen} with arguments {arguments or '{}'}"
    return f"Conversation:\n{conversation}\n\nTools:\n{tools}\n\n{action}\n\nWas this choice right or wrong?"


class Judge:
    def __init__(self, options: Mapping[str, Any]):
        options = dict(options)
        self.kind = str(options.pop("selector", "openai"))
        self.model_id = str(options.pop("model"))
        self.votes = int(options.pop("votes", 3))
        self.max_tokens = int(options.get("max_tokens", 16))
        options["max_tokens"] = self.max_tokens
        if self.kind == "openai":
            options.setdefault("temperature", 0.7)  # votes that could differ; they differ in the seed too
        self.caller = ProviderCaller(self.kind, self.model_id, options)

    def estimate_usd(self, item: SelectionInput) -> float:
        """An upper bound on the cost of the votes on one turn (the agent's reply at most max_tokens long)."""
        prompt = judge_prompt(item, NONE_LABEL, None, "x" * 1000)  # the longest reply the prompt quotes
        request = ChatRequest(model=self.model_id, system=JUDGE_SYSTEM, messages=(("user", prompt),),
                              max_tokens=self.max_tokens)
        return self.votes * self.caller.estimate_usd(request) * 1.5

    def requests(self, item: SelectionInput, chosen: str, arguments: str | None, reply_text: str,
                 as_text: bool = False) -> list[ChatRequest]:
        """One request per vote (the same prompt, a vote seed each): sent as calls or as batch lines."""
        prompt = judge_prompt(item, chosen, arguments, reply_text, as_text)
        return [ChatRequest(model=self.model_id, system=JUDGE_SYSTEM, messages=(("user", prompt),),
                            max_tokens=self.max_tokens, vote_seed=vote) for vote in range(self.votes)]

    def judge(self, item: SelectionInput, chosen: str, arguments: str | None, reply_text: str,
              ledger: RunLedger, turn: Turn | None = None, as_text: bool = False) -> JudgeResult:
        votes, cost = [], 0.0
        for request in self.requests(item, chosen, arguments, reply_text, as_text):
            result = self.caller.call(request, ledger, turn)
            cost += result.cost_usd or 0.0
            votes.append(read_vote(result.reply.text) if result.ok and result.reply is not None else "unsure")
        return JudgeResult(majority(tuple(votes)), tuple(votes), cost)


def arguments_text(arguments: Any) -> str | None:
    if arguments is None or isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)
