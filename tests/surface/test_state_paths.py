"""State paths are checked part by part against the state model and the fixtures before anything runs
(``assert-state-path``), and a required call a surface lacks is refused with the assertion that works on every
surface (``assert-tool-known``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.files.input_errors import InputError
from tasks.surface.load_surface import load_surface
from tasks.surface.load_tasks import freeze_task_version, load_task_version
from tasks.surface.task_checks import check_tasks
from tests.surface.mcp_office import write_office
from tests.surface.tiny_desk import BACKEND, desk_task, write_desk

# the desk with the kinds of collections a state model has: a typed dict (tickets), a typed list whose records
# have an id (invoices) or none (refunds), untyped records (notes: dict[str, Any], outbox: list[dict]), a list
# the fixtures leave empty (drafts)
BILLING_BACKEND = BACKEND.replace("class DeskState(BaseModel):", '''class Invoice(BaseModel):
    id: str
    amount: float
    status: Literal["paid", "unpaid"] = "unpaid"


class Refund(BaseModel):
    invoice_id: str
    amount: float


class DeskState(BaseModel):
    invoices: list[Invoice] = []
    refunds: list[Refund] = []
    notes: dict[str, Any] = {}
    outbox: list[dict] = []
    drafts: list[dict] = []''').replace("from typing import Annotated, Literal", "from typing import Annotated, Any, Literal")

FIXTURES = {"include": ["desk"],
            "invoices": [{"id": "in_4d02", "amount": 120.0}, {"id": "in_4c19", "amount": 80.0, "status": "paid"}],
            "notes": {"n1": {"text": "called back", "by": "ana"}, "n2": {"text": "waiting", "by": "bo"}},
            "outbox": [{"to": "ap@acme.example", "subject": "Invoice in_4c19"}]}

PATHS = {  # path -> the words of its refusal, or None: it passes
    # typed: the state model's fields
    "invoices.in_4d02.statuss": "Invoice has no field 'statuss' (did you mean 'status'?",
    "invoices.in_4d02.status": None,
    "invoices.in_9999.status": None,           # an invoice the task creates
    "invoices.0.amount": None,
    "refunds.0.amout": "Refund has no field 'amout' (did you mean 'amount'?",
    "refunds.0.amount": None,                  # the list starts empty: the task appends the refund
    "refunds.-1.invoice_id": None,
    "refunds.in_4d02.amount": "at 'refunds.in_4d02': 'refunds' is a list of Refund, which has no 'id' or 'name' field",
    "tickets.T-1002.statuss": "Ticket has no field 'statuss' (did you mean 'status'?",
    "tickets.T-5002.status": None,             # a ticket the task creates
    "tickets.T-1002": None,
    "tickets.T-1002.status.value": "'tickets.T-1002.status' is a single value (Literal): nothing lies below it",
    "pages_sent": None,
    "pages_sennt": "DeskState has no field 'pages_sennt' (did you mean 'pages_sent'?",
    # untyped: the keys the fixture records of the same collection have
    "notes.n1.by": None,
    "notes.n9.text": None,                     # a note the task creates, with a key the other notes have
    "notes.n9.txt": "no record of 'notes' has a key 'txt' in the fixtures (did you mean 'text'?",
    "notes.n1.bye": "no record of 'notes' has a key 'bye' in the fixtures (did you mean 'by'?",
    "outbox.0.to": None,
    "outbox.1.subject": None,                  # the email the task sends
    "outbox.-1.too": "no record of 'outbox' has a key 'too' in the fixtures (did you mean 'to'?",
    "outbox.0.to.domain": "'outbox.0.to' is a single value in the fixtures (str): nothing lies below it",
    "drafts.0.anything": None,                 # empty in the fixtures and untyped: cannot be told before the run
}


def billing_desk(tmp_path, tasks):
    folder = write_desk(tmp_path, tasks=tasks, freeze=False)
    (folder / "backend" / "desk.py").write_text(BILLING_BACKEND)
    freeze_task_version(folder, "t1", ["tickets", "questions"])
    return folder


def test_every_part_of_a_state_path_is_checked_against_the_model_and_the_fixtures(tmp_path):
    tasks = [desk_task(f"p{i}", "Refund invoice in_4d02.", {"state": [{"path": path, "absent": True}]},
                       fixtures=FIXTURES) for i, path in enumerate(PATHS)]
    folder = billing_desk(tmp_path, tasks)
    version = load_task_version(folder, "t1")
    with pytest.raises(InputError) as raised:
        check_tasks(version, [load_surface(folder, "plain"), load_surface(folder, "prefixed")])
    found = {p.where: p for p in raised.value.problems}
    for i, (path, refusal) in enumerate(PATHS.items()):
        where = f"line {i + 1} (id p{i})"
        if refusal is None:
            assert where not in found, f"{path} passes: {found.get(where)}"
            continue
        problem = found[where]
        assert problem.file == str(folder / "t1.jsonl") and problem.rule == "assert-state-path"
        assert problem.message.startswith(f"path '{path}': ") and refusal in problem.message, problem.message
    assert len(found) == sum(r is not None for r in PATHS.values())  # one problem per path, not one per surface


def test_the_bundled_tasks_state_paths_all_pass():
    folder = Path(__file__).resolve().parents[2] / "tasksets" / "support_tasks"
    version = load_task_version(folder, "t1")
    report = check_tasks(version, [load_surface(folder, name) for name in ("legacy", "legacy_namespaced", "redesigned")])
    assert report.n_tasks == len(version.lines)


def test_a_required_call_one_surface_lacks_is_refused_with_the_state_assertion_that_holds_everywhere(tmp_path):
    # a task of the support desk, literally: a tool only one surface could have
    t_041 = desk_task("t_041", "Email Acme their most recent unpaid invoice.",
                      {"tool": "send_email", "args": {"to": "ap@acme.example", "attachment_url": {"contains": "in_4c19"}}})
    folder = billing_desk(tmp_path, [t_041])
    version = load_task_version(folder, "t1")
    with pytest.raises(InputError) as raised:
        check_tasks(version, [load_surface(folder, "plain"), load_surface(folder, "prefixed")])
    [problem] = raised.value.problems
    assert str(problem).startswith(f"{folder / 't1.jsonl'}:line 1 (id t_041): [assert-tool-known] requires a call of "
                                   "'send_email', which surface(s) plain, prefixed do not have; assert on the state")
    assert "which holds on every surface" in problem.message
    assert "DeskState has invoices, refunds, notes, outbox, drafts, tickets, pages_sent" in problem.message
    # ...and the state assertion it points to passes the checks
    t_041 = desk_task("t_041", "Email Acme their most recent unpaid invoice.",
                      {"state": [{"path": "outbox.1.to", "equals": "ap@acme.example"},
                                 {"path": "outbox.1.subject", "contains": "in_4c19"}]}, fixtures=FIXTURES)
    (folder / "t2.jsonl").write_text(json.dumps(t_041) + "\n")
    freeze_task_version(folder, "t2", ["tickets"])
    assert check_tasks(load_task_version(folder, "t2"), [load_surface(folder, "plain")]).n_tasks == 1


def test_on_an_mcp_surface_a_state_path_and_a_missing_tool_point_to_probes(tmp_path):
    folder = write_office(tmp_path, tasks=[
        {"id": "o-1", "request": "Email Acme.", "slice": "crm", "assert": {"tool": "send_email"}},
        {"id": "o-2", "request": "Note Acme's plan.", "slice": "crm",
         "assert": {"state": [{"path": "entities.Acme.observations", "contains": "plan: pro"}]}}])
    version = load_task_version(folder, "t1")
    with pytest.raises(InputError) as raised:
        check_tasks(version, [load_surface(folder, "memory")])
    tool, path = raised.value.problems
    assert tool.rule == "assert-tool-known" and tool.where == "line 1 (id o-1)"
    assert "read the outcome with a probe instead" in tool.message and "assert on the state" not in tool.message
    assert path.rule == "assert-state-path" and path.where == "line 2 (id o-2)"
    assert "an MCP surface keeps no state model, so a state path can neither be checked nor scored" in path.message
    assert "read the end state with a probe" in path.message
