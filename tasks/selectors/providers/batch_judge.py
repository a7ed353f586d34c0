"""A judged arm's votes sent as a batch round after its chat round (``batch_selection.py``).

Each reply with a choice gets the judge's ``votes`` requests, built as its calls would be (``Judge.requests``),
as batch lines of the judge's provider (custom ids of turn ``JUDGE_TURN`` + the vote), read as a vote call is
(``read_vote``; a served model other than the pin is an ``unsure`` vote and halts the judge's model) and billed
at the judge's batch price. A line that errored, expired or was canceled at the provider is sent again as a
call; when the run is stopping it is not, and the row lands as an error (the chat call was kept before the
round: a rerun asks only the judge).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from schemas.selection.rows import Selection
from tasks.selectors.base import SelectionInput
from tasks.selectors.providers.call_budget import RunLedger
from tasks.selectors.providers.judge import Judge, majority, read_vote
from tasks.selectors.providers.pricing import ModelPrice
from tasks.selectors.providers.text_tool_calls import TEXT_CALL_DETAIL

JUDGE_TURN = 2
"""The custom ids' turn of a judge's first vote line (the chat line's is 0, an LLM router's 1)."""


@dataclass(frozen=True)
class Judged:
    """One request's votes from the round, their cost, and what they used: cost billed, calls and calls of
    unknown cost within the request's reservation (a call after a failed line reserves its own), HTTP requests
    in all."""

    votes: tuple[str, ...] | None
    """None: the run stopped before every vote came back."""
    cost: float
    billed: float
    calls: int
    unknown: int
    attempts: int

    def update(self, selection: Selection) -> dict[str, Any]:
        """The row's judge columns."""
        assert self.votes is not None
        return {"judge_verdict": majority(self.votes), "judge_votes": list(self.votes), "judge_cost_usd": self.cost,
                "http_attempts": (selection.http_attempts or 0) + self.attempts}


def judge_round(judge: Judge, price: ModelPrice, pending: Sequence[tuple[int, SelectionInput, Selection, str]],
                send: Any, ledger: RunLedger, run: Callable[..., dict], stopping: Callable[[], bool]
                ) -> dict[int, Judged]:
    """The votes on each pending (index, input, selection, reply text), sent as one batch round through
    ``run`` (``batch_selection._run``)."""
    from tasks.selectors.providers.batch.items import BatchItem, custom_id_for

    lines: dict[str, tuple[int, Any]] = {}
    for i, item, selection, reply_text in pending:
        as_text = (selection.detail or "").startswith(TEXT_CALL_DETAIL)
        requests = judge.requests(item, selection.chosen or "", selection.arguments, reply_text, as_text)
        for vote, request in enumerate(requests):
            custom_id = custom_id_for(send.run, send.arm, send.seed, send.keys[i], turn=JUDGE_TURN + vote)
            lines[custom_id] = (i, request)
    items = [BatchItem(custom_id=cid, request=request, label=f"{send.run}/{send.arm}/{send.seed}/{i}/judge")
             for cid, (i, request) in lines.items()]
    outcomes = run(judge.caller, items, send, ledger)
    votes: dict[int, list[str | None]] = {i: [] for i, *_ in pending}
    used: dict[int, list[float]] = {i: [0.0] * 5 for i, *_ in pending}  # cost, billed, calls, unknown, attempts
    for custom_id, (i, request) in lines.items():
        vote, *figures = _vote(judge, price, request, outcomes.get(custom_id), ledger, stopping)
        votes[i].append(vote)
        used[i] = [a + b for a, b in zip(used[i], figures)]
    return {i: Judged(None if None in votes[i] else tuple(v for v in votes[i] if v is not None), used[i][0],
                      used[i][1], *(int(n) for n in used[i][2:])) for i in votes}


def _vote(judge: Judge, price: ModelPrice, request: Any, outcome: Any, ledger: RunLedger,
          stopping: Callable[[], bool]) -> tuple[str | None, float, float, int, int, int]:
    """One vote line's vote (None: not asked, the run is stopping), cost; cost billed, calls and unknown-cost
    calls in the reservation; HTTP requests in all."""
    if outcome is None or outcome.status != "succeeded" or outcome.reply is None:
        submitted = int(bool(getattr(outcome, "batch_id", None)))
        if stopping():
            return None, 0.0, 0.0, submitted, 0, submitted
        result = judge.caller.call(request, ledger)  # a call of its own, reserved and settled by itself
        vote = read_vote(result.reply.text) if result.ok and result.reply is not None else "unsure"
        return vote, result.cost_usd or 0.0, 0.0, submitted, 0, submitted + int(result.sent) + result.retries
    reply = outcome.reply
    cost, mismatch = judge.caller.checked(reply, ledger, price)
    return ("unsure" if mismatch else read_vote(reply.text)), cost or 0.0, cost or 0.0, 1, int(cost is None), 1
