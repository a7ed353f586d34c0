"""A tiny task set written into a temporary folder: a help desk with a handful of tools, a few tasks, two
surfaces and an experiment, so the tests of the surface instrument do not depend on the bundled example."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from tasks.surface.load_tasks import freeze_task_version

BACKEND = '''
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from tasks.surface.toolkit import Page, Toolkit, ToolRefused, tool

TicketId = Annotated[str, Field(pattern=r"^T-\\d{4}$", description="Ticket id, e.g. T-1042.")]


class Ticket(BaseModel):
    ticket_id: str
    owner: str
    subject: str
    status: Literal["open", "closed"] = "open"
    escalated: bool = False


class DeskState(BaseModel):
    tickets: dict[str, Ticket] = {}
    pages_sent: int = 0


class Desk(Toolkit):
    """The help desk's tools."""

    state_model = DeskState
    page_size = 2

    @tool
    def list_tickets(self, owner: Annotated[str, Field(json_schema_extra={"format": "email"}, description="Owner email.")],
                     cursor: str | None = None) -> Page:
        """List a customer's open tickets, two per page; call again with next_cursor while has_more is true."""
        mine = [{"ticket_id": t.ticket_id, "subject": t.subject} for t in self.state.tickets.values()
                if t.owner == owner and t.status == "open"]
        return self.paginate(mine, cursor)

    @tool
    def get_ticket(self, ticket_id: TicketId) -> dict:
        """Read one ticket by its id."""
        self.read()
        ticket = self.state.tickets.get(ticket_id)
        if ticket is None:
            raise ToolRefused(f"no ticket {ticket_id}")
        return ticket.model_dump()

    @tool(writes=True)
    def close_ticket(self, ticket_id: TicketId) -> dict:
        """Close a ticket."""
        self.read()
        ticket = self.state.tickets.get(ticket_id)
        if ticket is None:
            raise ToolRefused(f"no ticket {ticket_id}")
        if ticket.status == "closed":
            raise ToolRefused(f"ticket {ticket_id} is already closed")
        ticket.status = "closed"
        return {"ticket_id": ticket_id, "status": "closed"}

    @tool(irreversible=True, handoff=True)
    def escalate_ticket(self, ticket_id: TicketId, reason: Annotated[str, Field(min_length=3)]) -> dict:
        """Escalate a ticket: pages the on-call engineer."""
        self.read()
        ticket = self.state.tickets.get(ticket_id)
        if ticket is None:
            raise ToolRefused(f"no ticket {ticket_id}")
        ticket.escalated = True
        self.state.pages_sent += 1
        return {"ticket_id": ticket_id, "paged": True}

    @tool
    def broken_report(self, ticket_id: TicketId) -> dict:
        """Summarise a ticket (its backend has a bug)."""
        return {"ratio": 1 / 0}
'''

TICKETS = {
    "T-1001": {"ticket_id": "T-1001", "owner": "ana@acme.example", "subject": "invoice wrong"},
    "T-1002": {"ticket_id": "T-1002", "owner": "ana@acme.example", "subject": "kettle leaks"},
    "T-1003": {"ticket_id": "T-1003", "owner": "ana@acme.example", "subject": "parcel late"},
}


def desk_task(task_id: str, request: str, assertion: dict[str, Any], *, slice_: str = "tickets",
              intent: str = "close", max_calls: int = 6, fixtures: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": task_id, "request": request, "slice": slice_, "intent": intent,
            "fixtures": fixtures if fixtures is not None else {"include": ["desk"]},
            "assert": assertion, "budget": {"max_calls": max_calls}}


DEFAULT_TASKS = [
    desk_task("close-1", "Please close ticket T-1002.",
              {"state": [{"path": "tickets.T-1002.status", "equals": "closed"}], "not_called": ["escalate_ticket"]}),
    desk_task("close-2", "I'm ana@acme.example, close my ticket about the parcel late.",
              {"state": [{"path": "tickets.T-1003.status", "equals": "closed"},
                         {"path": "tickets.T-1001.status", "equals": "open"}]}, intent="close"),
    desk_task("status-1", "What is the status of T-1001?",
              {"reply": {"contains": "open"}, "not_called": ["escalate_ticket"]}, slice_="questions", intent="status"),
    desk_task("escalate-1", "Escalate T-1001 to on-call now, it is urgent.",
              {"state": [{"path": "tickets.T-1001.escalated", "equals": True}]}, intent="escalate"),
]


def write_desk(root: Path, tasks: list[dict[str, Any]] | None = None, *, freeze: bool = True,
               slices: list[str] | None = None, experiment: str | None = None) -> Path:
    """A task-set folder 'desk' under ``root``; returns its path."""
    folder = root / "desk"
    (folder / "backend").mkdir(parents=True, exist_ok=True)
    (folder / "backend" / "desk.py").write_text(textwrap.dedent(BACKEND))
    (folder / "surfaces").mkdir(exist_ok=True)
    (folder / "surfaces" / "plain.yaml").write_text("name: plain\ntoolkit: desk:Desk\n")
    (folder / "surfaces" / "prefixed.yaml").write_text(
        "name: prefixed\ntoolkit: desk:Desk\ntransform:\n  prefix:\n    desk.: [list_tickets, get_ticket, "
        "close_ticket, escalate_ticket, broken_report]\n  rename: {list_tickets: find_tickets}\n")
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "default.md").write_text("You run the help desk.\n")
    (folder / "prompts" / "careful.md").write_text("You run the help desk. Never escalate unless asked.\n")
    (folder / "fixtures").mkdir(exist_ok=True)
    (folder / "fixtures" / "desk.json").write_text(json.dumps({"tickets": TICKETS}))
    lines = tasks if tasks is not None else DEFAULT_TASKS
    (folder / "t1.jsonl").write_text("".join(json.dumps(t) + "\n" for t in lines))
    if freeze:
        freeze_task_version(folder, "t1", slices or ["tickets", "questions"])
    (folder / "experiments").mkdir(exist_ok=True)
    (folder / "experiments" / "four.yaml").write_text(experiment or textwrap.dedent("""\
        name: desk-four
        taskset: ..
        version: t1
        seeds: [1, 2, 3]
        batch_size: 3
        defaults: {agent: baseline}
        arms:
          - {name: A, surface: plain, prompt: default}
          - {name: B, surface: plain, prompt: careful}
          - {name: C, surface: prefixed, prompt: default}
          - {name: D, surface: prefixed, prompt: careful}
        comparisons:
          - {from: A, to: B}
          - {from: A, to: C}
          - {from: A, to: D, declare: [prompt]}
        """))
    return folder


def close_ticket_script(seen):
    """A hosted agent (the loopback provider server's script) that closes T-1002, then says so."""
    from tests.provider_server import text_reply, tool_call

    if seen.turn == 0:
        return tool_call(next(t for t in seen.tools if t.endswith("close_ticket")), {"ticket_id": "T-1002"})
    return text_reply("Closed T-1002.")


def hosted_desk_experiment(openai_url: str, why_few_seeds: str, extra: str = "") -> str:
    """A two-arm (plain, prefixed surface), two-seed experiment of an OpenAI agent at ``openai_url``."""
    return f"""\
name: hosted
taskset: ..
version: t1
seeds: [1, 2]
declared: {{few_seeds: "{why_few_seeds}"}}
defaults: {{agent: openai, model: gpt-4.1-mini-2025-04-14, prompt: default,
           options: {{base_url: "{openai_url}", concurrency: 4, retry_base_delay_s: 0.01}}}}
arms:
  - {{name: A, surface: plain}}
  - {{name: C, surface: prefixed}}
{extra}"""
