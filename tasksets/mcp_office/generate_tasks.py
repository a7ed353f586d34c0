"""Write the bundled office tasks on the reference MCP servers (t1.jsonl), their shared fixture and the manifest,
deterministically.

    .venv/bin/python tasksets/mcp_office/generate_tasks.py     # writes nothing if t1 is frozen and equal

docs/surface/mcp.md ("The bundled example") describes the office, its fixture, the slices (``crm``, ``files``,
``cross``) and how tasks are graded. Agents reach documents by RELATIVE paths (``notes/acme.md``; a customer's
current contract is ``contracts/acme.md``, an expired one carries its year, ``contracts/acme-2024.md``).
Probes read the end state through the servers (``open_nodes`` for a record, ``read_text_file`` for a
document, ``list_directory`` for where a file is). A reply must name the fact asked for and no other customer:
a reply that dumps the whole CRM or every invoice does not answer. Deleting is never asserted by tool name: an
update that deletes and re-creates a record loses its relations, which the probes read (so the same assertion
holds on a surface without the delete tools).

Next to each task, ``ORACLES[id]`` holds the calls a competent agent makes (one call a turn) and its final reply,
kept out of t1.jsonl: ``tests/surface/test_mcp_office_example.py`` replays them on the real servers, and replays
``WRONG[id]`` (plausible but wrong runs, one or more per slice) to show the assertions are not vacuous.
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from tasks.surface import load_tasks  # noqa: E402

SEED = 20261202
VERSION = "t1"
SLICES = ["crm", "files", "cross"]
TODAY = "2026-12-01"

# -- the office ---------------------------------------------------------------------------------------------
# name, slug, plan, city, industry, contact, contact title, deal, stage, value (EUR), start, renewal,
# notice (days), account manager
CUSTOMERS = [
    ("Acme Corp", "acme", "enterprise", "Rotterdam", "manufacturing", "Dana Whitfield", "operations director",
     "Acme Robotics Rollout", "negotiation", 48000, "2026-03-01", "2027-03-01", 90, "Ruth Ostrowski"),
    ("Globex", "globex", "pro", "Lyon", "energy", "Marco Bellini", "head of IT",
     "Globex Analytics Upgrade", "proposal", 22500, "2026-07-01", "2027-06-30", 60, "Sam Okafor"),
    ("Initech", "initech", "starter", "Austin", "software", "Priya Raman", "office manager",
     "Initech Support Renewal", "won", 9800, "2026-01-15", "2027-01-14", 30, "Ruth Ostrowski"),
    ("Umbrella Health", "umbrella", "enterprise", "Basel", "healthcare", "Jonas Keller", "procurement lead",
     "Umbrella Lab Portal", "discovery", 75000, "2026-05-01", "2027-04-30", 90, "Sam Okafor"),
    ("Hooli", "hooli", "pro", "Dublin", "media", "Aoife Byrne", "product owner",
     "Hooli Media Archive", "proposal", 31000, "2026-09-01", "2027-08-31", 60, "Ruth Ostrowski"),
    ("Vandelay Industries", "vandelay", "starter", "Newark", "import and export", "Lena Morris", "finance manager",
     "Vandelay Customs Tracker", "qualified", 12400, "2026-02-01", "2027-01-31", 30, "Sam Okafor"),
    ("Soylent Foods", "soylent", "pro", "Malmo", "food", "Erik Lund", "supply chain manager",
     "Soylent Cold Chain Sensors", "negotiation", 27000, "2026-04-01", "2027-03-31", 60, "Ruth Ostrowski"),
    ("Stark Logistics", "stark", "enterprise", "Hamburg", "logistics", "Mia Hoffmann", "chief operating officer",
     "Stark Fleet Dashboard", "proposal", 56000, "2026-06-01", "2027-05-31", 90, "Sam Okafor"),
    ("Wonka Sweets", "wonka", "starter", "York", "confectionery", "Tom Ashby", "owner",
     "Wonka Webshop Refresh", "qualified", 8600, "2026-08-15", "2027-08-14", 30, "Ruth Ostrowski"),
    ("Tyrell Systems", "tyrell", "pro", "Osaka", "hardware", "Kenji Sato", "engineering manager",
     "Tyrell Test Lab Booking", "discovery", 19500, "2026-10-01", "2027-09-30", 60, "Sam Okafor"),
]
FIELDS = ("name", "slug", "plan", "city", "industry", "contact", "title", "deal", "stage", "value", "start",
          "renewal", "notice", "manager")
PEOPLE = [dict(zip(FIELDS, row)) for row in CUSTOMERS]
MANAGERS = ["Ruth Ostrowski", "Sam Okafor"]
OLD_CONTRACTS = ["acme", "globex", "hooli", "stark", "wonka", "tyrell"]
"""Customers whose expired 2024 contract still sits in contracts/ (to be archived)."""
NEXT_PLAN = {"starter": "pro", "pro": "enterprise"}
ALL_NAMES = [p["name"] for p in PEOPLE]


def email(person: dict) -> str:
    return f"{person['contact'].split()[0].lower()}@{person['slug']}.example"


def possessive(name: str) -> str:
    return f"{name}'" if name.endswith("s") else f"{name}'s"


def money(value: int) -> str:
    return f"EUR {value:,}"


def invoice_number(index: int) -> str:
    return f"INV-2026-{31 + index:03d}"


def invoice_amount(person: dict) -> str:
    return f"EUR {person['value'] / 4:,.2f}"


def graph() -> list[dict]:
    """The CRM as the memory server keeps it: one JSON object a line (entities, then relations)."""
    entities, relations = [], []
    for p in PEOPLE:
        entities.append({"type": "entity", "name": p["name"], "entityType": "customer", "observations": [
            f"plan: {p['plan']}", f"city: {p['city']}", f"industry: {p['industry']}",
            f"contract file: contracts/{p['slug']}.md"]})
        entities.append({"type": "entity", "name": p["contact"], "entityType": "person",
                         "observations": [f"title: {p['title']}", f"email: {email(p)}"]})
        entities.append({"type": "entity", "name": p["deal"], "entityType": "deal",
                         "observations": [f"stage: {p['stage']}", f"value: {money(p['value'])}"]})
        relations += [{"type": "relation", "from": p["contact"], "to": p["name"], "relationType": "works_at"},
                      {"type": "relation", "from": p["name"], "to": p["deal"], "relationType": "owns_deal"},
                      {"type": "relation", "from": p["manager"], "to": p["name"], "relationType": "manages_account"}]
    staff = [{"type": "entity", "name": m, "entityType": "staff", "observations": ["role: account manager"]}
             for m in MANAGERS]
    return staff + entities + relations


def note_lines(p: dict) -> list[str]:
    return [f"- 2026-09-14: kickoff call with {p['contact']} about the {p['deal']}.",
            f"- 2026-10-02: sent the {p['deal']} proposal, {money(p['value'])}.",
            f"- 2026-11-05: {p['contact'].split()[0]} asked for references in {p['industry']}."]


def note(p: dict, extra: list[str] = ()) -> str:
    return f"# {p['name']} - account notes\n\n" + "".join(line + "\n" for line in [*note_lines(p), *extra])


def contract(p: dict) -> str:
    return (f"# Service agreement - {p['name']}\n\nCustomer: {p['name']}\nPlan: {p['plan']}\n"
            f"Start date: {p['start']}\nRenewal date: {p['renewal']}\nNotice period: {p['notice']} days\n"
            f"Annual value: {money(p['value'])}\nContact: {p['contact']} <{email(p)}>\n")


def old_contract(p: dict) -> str:
    return (f"# Service agreement - {p['name']} (2024)\n\nCustomer: {p['name']}\nStart date: 2024-01-01\n"
            f"Status: expired 2025-12-31\n")


def invoice(index: int, p: dict) -> str:
    return (f"Invoice {invoice_number(index)}\nBill to: {p['name']}\nAmount: {invoice_amount(p)}\n"
            f"Issued: 2026-10-01\nDue: 2026-10-31\nStatus: {invoice_status(index)}\n")


def invoice_status(index: int) -> str:
    return "paid" if index % 3 == 0 else "unpaid"


def office() -> dict:
    """The shared fixture: the graph and every document, by path under the state folder."""
    files: dict[str, Any] = {"memory.jsonl": graph()}
    for p in PEOPLE:
        files[f"files/notes/{p['slug']}.md"] = note(p)
        files[f"files/contracts/{p['slug']}.md"] = contract(p)
    for slug in OLD_CONTRACTS:
        files[f"files/contracts/{slug}-2024.md"] = old_contract(by_slug(slug))
    for index, p in enumerate(PEOPLE):
        files[f"files/invoices/{invoice_number(index)}.md"] = invoice(index, p)
    files["files/archive/README.md"] = "Documents we no longer work on. Nothing is ever deleted: it comes here.\n"
    return {"files": files}


def by_slug(slug: str) -> dict:
    return next(p for p in PEOPLE if p["slug"] == slug)


# -- matchers and probes ------------------------------------------------------------------------------------
def literal(text: str) -> str:
    """``text`` as a regular expression matching it literally (spaces left as they are, for reading)."""
    return re.sub(r"([\\.^$*+?{}\[\]|()])", r"\\\1", text)


def only_about(pattern: str, person: dict, also: tuple[str, ...] = ()) -> dict:
    """A reply matcher: the reply matches ``pattern`` (case-insensitive) and names no customer but ``person`` and
    none of ``also`` (a wrong answer's words), so a reply that dumps every record does not answer the question."""
    banned = [name for name in ALL_NAMES if name != person["name"]] + list(also)
    excluded = "|".join(literal(name) for name in banned)
    return {"regex": rf"(?is)^(?!.*\b(?:{excluded})\b).*{pattern}"}


def lacks(text: str) -> dict:
    """A matcher holding when ``text`` is nowhere in the value."""
    return {"regex": rf"^(?![\s\S]*{literal(text)})"}


def node(name: str, path: str | None = None, **matcher: Any) -> dict:
    """A probe of one CRM record (and its relations) through open_nodes."""
    probe = {"probe": {"tool": "open_nodes", "args": {"names": [name]}}, **matcher}
    return {**probe, "path": path} if path else probe


def document(path: str, **matcher: Any) -> dict:
    """A probe of a document's text through read_text_file."""
    return {"probe": {"tool": "read_text_file", "args": {"path": path}}, **matcher}


def listing(folder: str, **matcher: Any) -> dict:
    """A probe of a folder's listing through list_directory ('[FILE] name' lines)."""
    return {"probe": {"tool": "list_directory", "args": {"path": folder}}, **matcher}


def kept(p: dict) -> list[dict]:
    """The customer's record is still there with its relations and its plan (nothing deleted and re-created)."""
    return [node(p["name"], f"entities.{p['name']}.entityType", equals="customer"),
            node(p["name"], contains=p["contact"]), node(p["name"], contains=p["deal"])]


def date_words(iso: str) -> str:
    """A pattern for a date written as 2027-03-01, 1 March 2027 or March 1, 2027."""
    months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December"]
    year, month, day = iso.split("-")
    name, d = months[int(month) - 1], str(int(day))
    return rf"(?:{iso}|{d}(?:st|nd|rd|th)? {name},? {year}|{name} {d}(?:st|nd|rd|th)?,? {year})"


READS_ONLY = ["create_entities", "create_relations", "add_observations", "write_file", "edit_file", "move_file"]
"""Writing tools of both surfaces: a question must call none of them."""


def oracle(*calls: tuple[str, dict], reply: str = "Done.") -> dict:
    """What a competent agent does: the calls (one a turn), then its final reply."""
    return {"calls": [[name, args] for name, args in calls], "reply": reply}


def observe(name: str, *contents: str) -> tuple[str, dict]:
    return ("add_observations", {"observations": [{"entityName": name, "contents": list(contents)}]})


def task(task_id: str, slice_: str, intent: str, request: str, assertion: dict, *, files: dict | None = None,
         max_calls: int | None = None) -> dict:
    fixtures: dict[str, Any] = {"include": ["office"]}
    if files:
        fixtures["files"] = files
    out = {"id": task_id, "request": request, "slice": slice_, "intent": intent, "fixtures": fixtures,
           "assert": assertion}
    if max_calls is not None:
        out["budget"] = {"max_calls": max_calls}
    return out


class Tasks:
    """The tasks in order, each with its oracle (and, for some, a plausible wrong run)."""

    def __init__(self) -> None:
        self.tasks: list[dict] = []
        self.oracles: dict[str, dict] = {}
        self.wrong: dict[str, dict] = {}

    def add(self, made: dict, right: dict, wrong: dict | None = None) -> None:
        self.tasks.append(made)
        self.oracles[made["id"]] = right
        if wrong is not None:
            self.wrong[made["id"]] = wrong


# -- crm -----------------------------------------------------------------------------------------------------
def crm_tasks(rng: random.Random, out: Tasks) -> None:
    for n, p in enumerate(rng.sample(PEOPLE, 3)):
        request = rng.choice([f"What plan is {p['name']} on?", f"Which plan does {p['name']} have with us?",
                              f"Quick one: is {p['name']} on starter, pro or enterprise?"])
        out.add(task(f"crm-plan-{n}", "crm", "search_nodes", request,
                     {"reply": only_about(rf"\b{p['plan']}\b", p), "not_called": READS_ONLY}, max_calls=8),
                oracle(("search_nodes", {"query": p["name"]}), reply=f"{p['name']} is on the {p['plan']} plan."),
                wrong=oracle(("read_graph", {}), reply=json.dumps({"entities": graph()})) if n == 0 else None)
    for n, p in enumerate(rng.sample(PEOPLE, 3)):
        request = rng.choice([f"Who is our contact at {p['name']}, and what is their email?",
                              f"I need to write to {p['name']}. Who do we deal with there, and at what address?"])
        out.add(task(f"crm-contact-{n}", "crm", "search_nodes", request,
                     {"reply": only_about(rf"{literal(p['contact'])}.*{literal(email(p))}"
                                          rf"|{literal(email(p))}.*{literal(p['contact'])}", p),
                      "not_called": READS_ONLY}, max_calls=8),
                oracle(("search_nodes", {"query": p["name"]}), ("open_nodes", {"names": [p["contact"]]}),
                       reply=f"Our contact at {p['name']} is {p['contact']} ({p['title']}), {email(p)}."))
    for n, p in enumerate(rng.sample(PEOPLE, 2)):
        out.add(task(f"crm-deal-{n}", "crm", "open_nodes",
                     f"What stage is the {p['deal']} deal at, and what is it worth?",
                     {"reply": only_about(rf"\b{p['stage']}\b.*{p['value'] // 1000}[,.]?{p['value'] % 1000:03d}"
                                          rf"|{p['value'] // 1000}[,.]?{p['value'] % 1000:03d}.*\b{p['stage']}\b", p),
                      "not_called": READS_ONLY}, max_calls=8),
                oracle(("open_nodes", {"names": [p["deal"]]}),
                       reply=f"The {p['deal']} deal is at stage {p['stage']}, worth {money(p['value'])}."))
    for n, p in enumerate(rng.sample(PEOPLE, 2)):
        other = next(m for m in MANAGERS if m != p["manager"])
        out.add(task(f"crm-manager-{n}", "crm", "search_nodes",
                     f"Which of our account managers looks after {p['name']}?",
                     {"reply": only_about(literal(p["manager"]), p, also=(other,)),
                      "not_called": READS_ONLY}, max_calls=8),
                oracle(("search_nodes", {"query": p["name"]}), reply=f"{p['manager']} manages {p['name']}."))
    remarks = ["prefers invoices by post", "closed between Christmas and New Year", "wants a quarterly review call",
               "pays by bank transfer only"]
    for n, (p, remark) in enumerate(zip(rng.sample(PEOPLE, 2), rng.sample(remarks, 2))):
        out.add(task(f"crm-observe-{n}", "crm", "add_observations",
                     f"Please add the observation '{remark}' to {p['name']} in the CRM.",
                     {"probes": [node(p["name"], f"entities.{p['name']}.observations", contains=remark),
                                 node(p["name"], f"entities.{p['name']}.observations", contains=f"plan: {p['plan']}"),
                                 *kept(p)]}, max_calls=8),
                oracle(observe(p["name"], remark)))
    cities = ["Bergen", "Leipzig", "Porto", "Gdansk", "Tampere", "Bilbao"]
    for n, (p, city) in enumerate(zip(rng.sample(PEOPLE, 2), rng.sample(cities, 2))):
        out.add(task(f"crm-move-{n}", "crm", "open_nodes",
                     rng.choice([f"{p['name']} moved their office from {p['city']} to {city}. Update the CRM.",
                                 f"Heads up: {p['name']} is in {city} now, no longer {p['city']}. Please fix their "
                                 "record."]),
                     {"probes": [node(p["name"], regex=rf"\b{city}\b"), *kept(p)]}),
                oracle(("open_nodes", {"names": [p["name"]]}), ("delete_observations", {"deletions": [
                    {"entityName": p["name"], "observations": [f"city: {p['city']}"]}]}),
                       observe(p["name"], f"city: {city}")))
    upgradable = [p for p in PEOPLE if p["plan"] in NEXT_PLAN]
    for n, p in enumerate(rng.sample(upgradable, 2)):
        new = NEXT_PLAN[p["plan"]]
        out.add(task(f"crm-upgrade-{n}", "crm", "open_nodes",
                     f"{p['name']} upgraded from {p['plan']} to {new} today. Please update their CRM record.",
                     {"probes": [node(p["name"], regex=rf"(?i)\b{new}\b"), *kept(p)]}),
                oracle(("open_nodes", {"names": [p["name"]]}), ("delete_observations", {"deletions": [
                    {"entityName": p["name"], "observations": [f"plan: {p['plan']}"]}]}),
                       observe(p["name"], f"plan: {new}", f"upgraded from {p['plan']} on {TODAY}")),
                wrong=oracle(("delete_entities", {"entityNames": [p["name"]]}), ("create_entities", {"entities": [
                    {"name": p["name"], "entityType": "customer", "observations": [f"plan: {new}"]}]}))
                if n == 0 else None)
    newcomers = [("Nadia Petrova", "finance director"), ("Oskar Lind", "IT administrator"),
                 ("Grace Mensah", "purchasing manager")]
    for n, (p, (person, title)) in enumerate(zip(rng.sample(PEOPLE, 2), rng.sample(newcomers, 2))):
        address = f"{person.split()[0].lower()}@{p['slug']}.example"
        out.add(task(f"crm-contact-new-{n}", "crm", "create_entities",
                     f"Add {person} ({title}, {address}) to the CRM as a new contact at {p['name']}.",
                     {"probes": [node(person, regex=literal(address)),
                                 node(person, "relations.0.from", equals=person),
                                 node(person, "relations.0.to", equals=p["name"]),
                                 node(person, "relations.0.relationType", regex=r"(?i)work"), *kept(p)[1:]]}),
                oracle(("search_nodes", {"query": p["name"]}),
                       ("create_entities", {"entities": [{"name": person, "entityType": "person", "observations": [
                           f"title: {title}", f"email: {address}"]}]}),
                       ("create_relations", {"relations": [{"from": person, "to": p["name"],
                                                            "relationType": "works_at"}]})))


# -- files ---------------------------------------------------------------------------------------------------
def files_tasks(rng: random.Random, out: Tasks) -> None:
    questions = [  # (question, the contract's line that answers it, the fact's pattern): two name the file's verb
        ("What's the notice period in contracts/{slug}.md?", "Notice period", lambda p: rf"\b{p['notice']} days"),
        ("Can you read contracts/{slug}.md and tell me when it comes up for renewal?", "Renewal date",
         lambda p: date_words(p["renewal"])),
        ("What is the annual value written in contracts/{slug}.md?", "Annual value",
         lambda p: rf"{p['value'] // 1000}[,.]?{p['value'] % 1000:03d}"),
        ("Look in the file contracts/{slug}.md: which email address does it give for the customer's contact?",
         "Contact", lambda p: literal(email(p))),
    ]
    for n, (p, (question, line, fact)) in enumerate(zip(rng.sample(PEOPLE, 4), questions)):
        path = f"contracts/{p['slug']}.md"
        answer = next(text for text in contract(p).splitlines() if text.startswith(line))
        out.add(task(f"files-read-{n}", "files", "read_text_file", question.format(slug=p["slug"]),
                     {"reply": only_about(fact(p), p), "not_called": READS_ONLY}, max_calls=8),
                oracle(("read_text_file", {"path": path}), reply=f"{path} says {answer}."))
    invoices = list(enumerate(PEOPLE))
    paid = rng.choice([(i, p) for i, p in invoices if invoice_status(i) == "paid"])
    unpaid = rng.choice([(i, p) for i, p in invoices if invoice_status(i) == "unpaid"])
    all_invoices = [f"invoices/{invoice_number(i)}.md" for i, _ in invoices]
    for n, (index, p) in enumerate([paid, unpaid]):
        number = invoice_number(index)
        if invoice_status(index) == "paid":
            answer = only_about(r"\bpaid\b", p, also=("unpaid", "not paid", "not been paid"))
        else:
            answer = only_about(r"\bunpaid\b|\bnot (?:yet )?(?:been )?paid\b|\bhas(?:n't| not) (?:yet )?been paid\b"
                                r"|outstanding", p)
        out.add(task(f"files-invoice-{n}", "files", "list_directory",
                     f"Has {p['name']} paid their October invoice? It's one of the files in the invoices folder.",
                     {"reply": answer, "not_called": READS_ONLY}, max_calls=10),
                oracle(("list_directory", {"path": "invoices"}), ("read_multiple_files", {"paths": all_invoices}),
                       reply=f"Invoice {number} of {p['name']} is {invoice_status(index)}."))
    events = ["called {first} about the renewal, a quote is due Friday",
              "{first} confirmed the budget for next year",
              "sent {first} the updated price list",
              "{first} asked to move the review call to January"]
    for n, (p, event) in enumerate(zip(rng.sample(PEOPLE, 3), rng.sample(events, 3))):
        path = f"notes/{p['slug']}.md"
        line = f"- {TODAY}: {event.format(first=p['contact'].split()[0])}"
        last = note_lines(p)[-1]
        out.add(task(f"files-append-{n}", "files", "read_text_file",
                     rng.choice([f"Add this line at the end of {path}: {line}",
                                 f"Please append to {path} the line: {line}"]),
                     {"probes": [document(path, regex=rf"(?s){literal(last)}.*{literal(line[2:])}"),
                                 document(path, contains=note_lines(p)[0])]}, max_calls=8),
                oracle(("read_text_file", {"path": path}),
                       ("edit_file", {"path": path, "edits": [{"oldText": last, "newText": f"{last}\n{line}"}]})),
                wrong=oracle(("write_file", {"path": path, "content": line + "\n"})) if n == 0 else None)
    for n, p in enumerate(rng.sample(PEOPLE, 2)):
        path = f"contracts/{p['slug']}.md"
        first, last = p["contact"].lower().split()
        new = f"{first}.{last}@{p['slug']}.example"
        out.add(task(f"files-replace-{n}", "files", "edit_file",
                     f"The contact email in {path} is out of date: replace {email(p)} with {new}.",
                     {"probes": [document(path, contains=new), document(path, **lacks(email(p))),
                                 document(path, contains=f"Renewal date: {p['renewal']}")]}, max_calls=8),
                oracle(("edit_file", {"path": path, "edits": [{"oldText": email(p), "newText": new}]})))
    for n, slug in enumerate(rng.sample(OLD_CONTRACTS, 4)):
        p = by_slug(slug)
        source = f"contracts/{slug}-2024.md"
        if n < 2:
            target = f"archive/{slug}-2024.md"
            request = rng.choice([f"Move {source} to {target}, it has expired.",
                                  f"{source} expired last year. Please move it to {target}."])
            calls = [("move_file", {"source": source, "destination": target})]
        else:
            target = f"archive/contracts/{slug}-2024.md"
            request = f"Archive {source}, it expired. File it as {target} (that folder does not exist yet)."
            calls = [("create_directory", {"path": "archive/contracts"}),
                     ("move_file", {"source": source, "destination": target})]
        out.add(task(f"files-archive-{n}", "files", "move_file", request,
                     {"probes": [document(target, contains=f"Customer: {p['name']}"),
                                 listing("contracts", **lacks(f"{slug}-2024.md")),
                                 listing("contracts", contains=f"[FILE] {slug}.md")]}, max_calls=8),
                oracle(*calls))
    for n, p in enumerate(rng.sample(PEOPLE, 2)):
        path = f"notes/{p['slug']}-call-{TODAY}.md"
        text = f"Call with {p['contact']} on {TODAY}: we send the {p['deal']} timeline by 2026-12-08."
        out.add(task(f"files-new-note-{n}", "files", "write_file",
                     f"Create {path} with this text: {text} Keep the existing notes/{p['slug']}.md as it is.",
                     {"probes": [document(path, regex=rf"(?s)^(?!.*Keep the existing).*{literal(text)}"),
                                 document(f"notes/{p['slug']}.md", equals=note(p))]}, max_calls=8),
                oracle(("write_file", {"path": path, "content": text + "\n"})))


# -- cross: both servers -------------------------------------------------------------------------------------
NEW_CUSTOMERS = [
    {"name": "Nakatomi Trading", "slug": "nakatomi", "plan": "enterprise", "city": "Los Angeles", "industry": "trade",
     "contact": "Holly Gennaro", "title": "vice president", "deal": "", "stage": "", "value": 64000,
     "start": "2026-12-01", "renewal": "2027-11-30", "notice": 90, "manager": "Ruth Ostrowski"},
    {"name": "Cyberdyne Research", "slug": "cyberdyne", "plan": "pro", "city": "Sunnyvale", "industry": "research",
     "contact": "Miles Dyson", "title": "research director", "deal": "", "stage": "", "value": 23000,
     "start": "2026-12-01", "renewal": "2027-11-30", "notice": 60, "manager": "Sam Okafor"},
]


def cross_tasks(rng: random.Random, out: Tasks) -> None:
    for n, p in enumerate(rng.sample(PEOPLE, 4)):
        path = f"contracts/{p['slug']}.md"
        out.add(task(f"cross-renewal-{n}", "cross", "read_text_file",
                     rng.choice([f"Read {path} and record its renewal date on {p['name']} in the CRM.",
                                 f"Put the renewal date from {path} on the {p['name']} record in the CRM, please."]),
                     {"probes": [node(p["name"], regex=date_words(p["renewal"])), *kept(p),
                                 document(path, equals=contract(p))]}, max_calls=10),
                oracle(("read_text_file", {"path": path}), observe(p["name"], f"renews {p['renewal']}")),
                wrong=oracle(("read_text_file", {"path": path}), observe(p["name"], f"renews {p['start']}"))
                if n == 0 else None)
    for n, p in enumerate(rng.sample(PEOPLE, 2)):
        path = f"contracts/{p['slug']}.md"
        out.add(task(f"cross-renewal-ask-{n}", "cross", "open_nodes",
                     f"When does {possessive(p['name'])} contract renew? Please also put the renewal date on their "
                     "CRM record.",
                     {"reply": only_about(date_words(p["renewal"]), p),
                      "probes": [node(p["name"], regex=date_words(p["renewal"])), *kept(p)]}),
                oracle(("open_nodes", {"names": [p["name"]]}), ("read_text_file", {"path": path}),
                       observe(p["name"], f"renews {p['renewal']}"),
                       reply=f"{possessive(p['name'])} contract renews on {p['renewal']}; I noted it on their record."))
    unpaid = [(i, p) for i, p in enumerate(PEOPLE) if invoice_status(i) == "unpaid"]
    for n, (index, p) in enumerate(rng.sample(unpaid, 3)):
        number = invoice_number(index)
        path = f"invoices/{number}.md"
        out.add(task(f"cross-paid-{n}", "cross", "read_text_file",
                     rng.choice([f"Invoice {path} was paid today. Mark it paid in the file and note the payment on "
                                 "the customer's record in the CRM.",
                                 f"We received the money for {path}. Please set its status to paid and record the "
                                 "payment in the CRM on the customer it bills."]),
                     {"probes": [document(path, regex=r"(?i)Status: paid"), document(path, **lacks("unpaid")),
                                 document(path, contains=f"Amount: {invoice_amount(p)}"),
                                 node(p["name"], regex=rf"(?is){number}.*\bpaid\b|\bpaid\b.*{number}"), *kept(p)]}),
                oracle(("read_text_file", {"path": path}),
                       ("edit_file", {"path": path, "edits": [{"oldText": "Status: unpaid",
                                                               "newText": "Status: paid"}]}),
                       observe(p["name"], f"paid invoice {number} on {TODAY}")))
    for n, p in enumerate(rng.sample(PEOPLE, 2)):
        path = f"notes/{p['slug']}.md"
        heading = note(p).splitlines()[0]
        out.add(task(f"cross-contact-notes-{n}", "cross", "search_nodes",
                     f"Copy the name and email of our contact at {p['name']} from the CRM into {path}, right under "
                     "the heading.",
                     {"probes": [document(path, regex=rf"(?s){literal(p['contact'])}[^\n]*{literal(email(p))}"
                                                      rf".*{literal(note_lines(p)[0])}"),
                                 document(path, contains=note_lines(p)[-1])]}),
                oracle(("search_nodes", {"query": p["name"]}), ("open_nodes", {"names": [p["contact"]]}),
                       ("read_text_file", {"path": path}),
                       ("edit_file", {"path": path, "edits": [{
                           "oldText": heading, "newText": f"{heading}\n\nContact: {p['contact']} <{email(p)}>"}]})))
    for n, p in enumerate(NEW_CUSTOMERS):
        path = f"contracts/{p['slug']}.md"
        out.add(task(f"cross-onboard-{n}", "cross", "read_text_file",
                     f"We just signed {p['name']}; their contract is {path}. Add them to the CRM as a customer, "
                     "with their plan and renewal date.",
                     {"probes": [node(p["name"], f"entities.{p['name']}.entityType", regex=r"(?i)^(customer|client)$"),
                                 node(p["name"], regex=rf"(?i)\b{p['plan']}\b"),
                                 node(p["name"], regex=date_words(p["renewal"]))]},
                     files={f"files/{path}": contract(p)}),
                oracle(("read_text_file", {"path": path}), ("create_entities", {"entities": [{
                    "name": p["name"], "entityType": "customer",
                    "observations": [f"plan: {p['plan']}", f"renews {p['renewal']}", f"contract file: {path}"]}]})))
    open_deals = [p for p in PEOPLE if p["stage"] not in ("won", "lost")]
    outcomes = ["won", "lost", "won"]
    for n, (p, result) in enumerate(zip(rng.sample(open_deals, 3), outcomes)):
        path = f"notes/{p['slug']}.md"
        first = p["contact"].split()[0]
        news = (f"- 2026-11-28: {first} signed the order form; the {p['deal']} deal is won."
                if result == "won" else f"- 2026-11-28: {first} called, they chose another vendor: deal lost.")
        out.add(task(f"cross-deal-{n}", "cross", "read_text_file",
                     f"{path} has the latest on the {p['deal']} deal. Update the deal's stage in the CRM to match.",
                     {"probes": [node(p["deal"], regex=rf"(?i)\b{result}\b"),
                                 node(p["deal"], contains=p["name"]),
                                 node(p["deal"], f"entities.{p['deal']}.observations",
                                      contains=f"value: {money(p['value'])}")]},
                     files={f"files/{path}": note(p, [news])}),
                oracle(("read_text_file", {"path": path}), ("open_nodes", {"names": [p["deal"]]}),
                       ("delete_observations", {"deletions": [{"entityName": p["deal"],
                                                               "observations": [f"stage: {p['stage']}"]}]}),
                       observe(p["deal"], f"stage: {result}")))


# -- the version -------------------------------------------------------------------------------------------
def examples() -> Tasks:
    """Every task, in file order, with its oracle and the plausible wrong runs."""
    rng = random.Random(SEED)
    out = Tasks()
    crm_tasks(rng, out)
    files_tasks(rng, out)
    cross_tasks(rng, out)
    return out


ORACLES: dict[str, dict] = examples().oracles
"""Task id -> {"calls": [[backend tool, arguments], ...] (one a turn), "reply": final text}: a competent run."""
WRONG: dict[str, dict] = examples().wrong
"""Task id -> a plausible run that must fail (e.g. the note overwritten instead of appended to)."""


def build() -> dict[str, str]:
    """The files of the version, by path relative to this folder: the same text on every run."""
    tasks = examples().tasks
    return {
        "fixtures/office.json": json.dumps(office(), indent=1, ensure_ascii=False) + "\n",
        f"{VERSION}.jsonl": "".join(json.dumps(t, ensure_ascii=False, separators=(",", ":")) + "\n" for t in tasks),
    }


def main() -> int:
    files = build()
    manifest = load_tasks.write_version(HERE, VERSION, files, ["office"], SLICES, notes=(
        f"generate_tasks.py, seed {SEED}: {len(files[f'{VERSION}.jsonl'].splitlines())} tasks on the reference "
        "memory and filesystem MCP servers over the shared fixture office"))
    print(f"{VERSION}: {manifest.n_tasks} tasks {manifest.counts_by_slice}, hash {manifest.content_hash[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
