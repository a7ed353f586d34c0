"""Write the bundled support tasks (t1.jsonl), their shared fixtures and the manifest, deterministically.

    .venv/bin/python tasksets/support_tasks/generate_tasks.py          # writes nothing if t1 is frozen and equal

Every task is built from the templates below with ``random.Random(SEED)``, so the file is reviewable as
code and the same on every machine. Tasks are graded on outcomes that hold on either surface: the final
state (a ticket closed, escalated, opened for the right customer; nothing escalated or opened when the
customer did not ask) and what the final reply must say (the fact of the right article, a ticket's status).
The only call assertion is ``not_called: escalate_ticket`` (paging on-call), a tool both surfaces keep.

Slices (never averaged together): ``answers`` (help-center questions), ``tickets`` (one ticket action,
its id given), ``multi_step`` (the ticket must first be found from the customer's email).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from tasks.surface.load_tasks import write_version  # noqa: E402

SEED = 20261201
VERSION = "t1"
SLICES = ["answers", "tickets", "multi_step"]

# (slug, title, body, fact regex the reply must match, question, topic words for "where can I read about")
ARTICLES = [
    ("refund-timelines", "Refund timelines", "Refunds reach your card within 5 business days of the return scan.",
     r"(5|five) business days", "How long does a refund take to reach my card?", "refund timelines"),
    ("return-window", "Return window", "You can return most items within 30 days of delivery, unused and in the box.",
     r"(30|thirty) days", "How many days do I have to send something back?", "the return window"),
    ("shipping-times", "Shipping times", "Standard shipping arrives in 3 to 5 working days; express arrives next day.",
     r"(3|three) to (5|five) working days", "How long does standard shipping take?", "shipping times"),
    ("international-shipping", "International shipping", "We ship to 42 countries; customs duties are paid by the recipient.",
     r"42 countries", "Do you ship abroad, and to how many countries?", "international shipping"),
    ("reset-password", "Reset your password", "Use 'Forgot password' on the sign-in page; the reset link expires after 2 hours.",
     r"(2|two) hours", "How long is the password reset link valid?", "resetting a password"),
    ("two-factor", "Two-factor authentication", "Turn on two-factor in Settings > Security; backup codes are shown once.",
     r"backup codes", "How do I switch on two-factor sign-in?", "two-factor authentication"),
    ("download-invoices", "Download invoices", "Invoices are under Account > Billing as PDF, kept for 7 years.",
     r"(7|seven) years", "How far back can I download my invoices?", "downloading invoices"),
    ("change-plan", "Change your plan", "Upgrades apply at once; downgrades apply at the next billing date.",
     r"next billing date", "When does a downgrade of my plan take effect?", "changing plans"),
    ("cancel-subscription", "Cancel a subscription", "Cancel any time in Account > Subscriptions; access lasts until the period ends.",
     r"period ends", "If I cancel my subscription, when do I lose access?", "cancelling a subscription"),
    ("export-data", "Export your data", "Request an export in Settings > Privacy; the archive is emailed within 48 hours.",
     r"48 hours", "How quickly will I get my data export?", "exporting my data"),
    ("delete-account", "Delete your account", "Deleting an account is final after a 14-day grace period.",
     r"14-day grace", "Can I undo deleting my account?", "account deletion"),
    ("gift-card-balance", "Gift card balance", "Check a gift card balance at checkout; gift cards never expire.",
     r"never expire", "Do gift cards expire?", "gift card balances"),
    ("price-match", "Price match", "We match a lower price from a major retailer within 14 days of purchase.",
     r"within 14 days of purchase", "Do you match prices if I find it cheaper elsewhere?", "price matching"),
    ("warranty", "Warranty", "Electronics carry a 2-year warranty; keep the order number as proof.",
     r"(2|two)-year warranty", "How long is the warranty on electronics?", "the warranty"),
    ("damaged-item", "Damaged on arrival", "Report damage within 48 hours with a photo and we send a replacement.",
     r"photo", "My parcel arrived damaged, what do you need from me?", "damaged deliveries"),
    ("missing-parcel", "Missing parcel", "If tracking shows delivered but nothing arrived, wait 24 hours, then contact us.",
     r"24 hours", "Tracking says delivered but I have nothing. What now?", "missing parcels"),
    ("change-address", "Change delivery address", "Addresses can be changed until the order is packed, usually within 1 hour.",
     r"(1|one) hour", "Until when can I change the delivery address?", "changing a delivery address"),
    ("payment-methods", "Payment methods", "We accept cards, PayPal and bank transfer; bank transfers clear in 2 days.",
     r"PayPal", "Which ways can I pay?", "payment methods"),
    ("student-discount", "Student discount", "Students get 10% off after verifying with a university email.",
     r"10%", "Is there a discount for students?", "the student discount"),
    ("coffee-subscription", "Coffee subscription", "Coffee subscriptions ship every 2, 4 or 6 weeks; skip a delivery any time.",
     r"skip", "Can I skip a coffee delivery?", "coffee subscriptions"),
    ("api-rate-limits", "API rate limits", "The partner API allows 600 requests per minute per key.",
     r"600 requests", "What is the API rate limit for partners?", "API rate limits"),
    ("order-history", "Order history", "Your order history lists every order of the last 5 years.",
     r"(5|five) years", "How far back does my order history go?", "order history"),
    ("newsletter", "Newsletter", "Unsubscribe with the link at the bottom of any newsletter; it takes effect in 2 days.",
     r"(2|two) days", "How do I stop the newsletter emails?", "unsubscribing from the newsletter"),
    ("loyalty-points", "Loyalty points", "Each euro spent earns 1 point; 100 points are worth 5 euros.",
     r"100 points", "How much are my loyalty points worth?", "loyalty points"),
    ("store-pickup", "Store pickup", "Click and collect orders wait in store for 7 days.",
     r"(7|seven) days", "How long will the store hold my click and collect order?", "store pickup"),
    ("business-accounts", "Business accounts", "Business accounts get invoices with VAT numbers and 30-day payment terms.",
     r"VAT", "Can I get invoices with my VAT number?", "business accounts"),
    ("accessibility", "Accessibility", "The app supports screen readers and a high-contrast mode.",
     r"screen readers", "Does the app work with a screen reader?", "accessibility"),
    ("recycling", "Packaging recycling", "All packaging is recyclable; send back coffee bags for free.",
     r"recyclable", "Is your packaging recyclable?", "packaging and recycling"),
    ("pre-orders", "Pre-orders", "Pre-orders are charged when they ship, not when you order.",
     r"when they ship", "When am I charged for a pre-order?", "pre-orders"),
    ("contact-hours", "Contact hours", "Support answers chat from 8:00 to 20:00 CET, Monday to Saturday.",
     r"8:00", "When is live chat support available?", "contact hours"),
]

FIRST = ["Ana", "Ben", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana", "Ivo", "Jo", "Kai", "Lea", "Max", "Noor",
         "Oli", "Pia", "Quinn", "Ravi", "Sol", "Tess", "Uma", "Vic", "Wen", "Yara"]
COMPANIES = ["acme", "globex", "initech", "umbrella", "hooli", "vandelay", "soylent", "stark", "wayne", "wonka",
             "tyrell", "cyberdyne"]
SUBJECTS = ["invoice shows the wrong amount", "coffee grinder stopped working", "parcel never arrived",
            "cannot sign in to the app", "double charge on my card", "wrong size delivered", "tent pole snapped",
            "discount code rejected", "subscription renewed unexpectedly", "headphones crackle",
            "refund not received", "kettle leaks", "delivery left at wrong address", "account locked",
            "missing item in box", "gift card not accepted", "app crashes at checkout", "lamp arrived cracked",
            "password reset email missing", "order stuck in processing"]
PROBLEMS = ["my order arrived broken", "I was charged twice for one order", "the app logs me out every minute",
            "my parcel is three weeks late", "the coffee I received is the wrong blend",
            "my discount code does not work at checkout"]


def customers(rng: random.Random) -> list[dict]:
    out = []
    for i, name in enumerate(FIRST):
        company = COMPANIES[i % len(COMPANIES)]
        out.append({"customer_id": f"C-{100 + i}", "email": f"{name.lower()}@{company}.example",
                    "name": f"{name} {company.title()}", "plan": rng.choice(["free", "pro", "enterprise"])})
    return out


def kb() -> dict:
    return {"articles": {f"KB-{i:04d}": {"article_id": f"KB-{i:04d}", "slug": slug, "title": title, "body": body}
                         for i, (slug, title, body, *_rest) in enumerate(ARTICLES, start=1)}}


class Tickets:
    """Unique ticket ids and per-task ticket fixtures."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: set[int] = set()

    def new_id(self) -> str:
        while True:
            number = self.rng.randint(1000, 4999)
            if number not in self.used:
                self.used.add(number)
                return f"T-{number:04d}"

    def make(self, email: str, subject: str, status: str = "open", priority: str = "normal") -> dict:
        return {"ticket_id": self.new_id(), "customer_email": email, "subject": subject, "status": status,
                "priority": priority}


def task(task_id: str, slice_: str, intent: str, request: str, assertion: dict, fixtures: dict,
         max_calls: int) -> dict:
    return {"id": task_id, "request": request, "slice": slice_, "intent": intent,
            "fixtures": {"include": ["kb", "customers"], **fixtures}, "assert": assertion,
            "budget": {"max_calls": max_calls}}


NO_TICKET_OPENED = {"path": "next_ticket_number", "equals": 5001}
NO_PAGE = "escalate_ticket"


def answer_tasks(rng: random.Random, tickets: Tickets) -> list[dict]:
    out = []
    for i, (slug, title, body, fact, question, topic) in enumerate(ARTICLES, start=1):
        guard = {"reply": {"regex": fact}, "state": [NO_TICKET_OPENED], "not_called": [NO_PAGE]}
        out.append(task(f"ans-{i:02d}-q", "answers", "find_article", question, guard, {}, 8))
        out.append(task(f"ans-{i:02d}-w", "answers", "find_article",
                        f"Where can I read about {topic}?", guard, {}, 8))
        if i <= 20:
            out.append(task(f"ans-{i:02d}-l", "answers", "find_article",
                            f"Look up the help article \"{title}\" for me.", guard, {}, 8))
    for i in rng.sample(range(1, len(ARTICLES) + 1), 20):
        slug, title, body, fact, *_ = ARTICLES[i - 1]
        out.append(task(f"art-{i:02d}", "answers", "read_article",
                        rng.choice([f"Show me article KB-{i:04d}.", f"Please paste the text of KB-{i:04d}.",
                                    f"What does help article KB-{i:04d} say?"]),
                        {"reply": {"regex": fact}, "state": [NO_TICKET_OPENED]}, {}, 8))
    return out


def ticket_tasks(rng: random.Random, tickets: Tickets, people: list[dict]) -> list[dict]:
    out = []

    def own(person: dict, n_other: int = 2, **target: str) -> tuple[dict, dict]:
        subject = rng.choice(SUBJECTS)
        main = tickets.make(person["email"], subject, **target)
        others = [tickets.make(person["email"], s) for s in rng.sample([s for s in SUBJECTS if s != subject], n_other)]
        return main, {"tickets": {t["ticket_id"]: t for t in [main, *others]}}

    for n in range(20):
        person = rng.choice(people)
        status = rng.choice(["pending", "open"])
        main, fixtures = own(person, status=status)
        tid = main["ticket_id"]
        out.append(task(f"tkt-status-{n:02d}", "tickets", "ticket_status",
                        rng.choice([f"What's the status of my ticket {tid}?", f"Any news on ticket {tid}?",
                                    f"Can you check where {tid} stands?"]),
                        {"reply": {"regex": rf"\b{status}\b"}, "state": [{"path": f"tickets.{tid}.status", "equals": status}],
                         "not_called": [NO_PAGE]}, fixtures, 10))
    for n in range(20):
        person = rng.choice(people)
        main, fixtures = own(person)
        tid = main["ticket_id"]
        out.append(task(f"tkt-close-{n:02d}", "tickets", "close_ticket",
                        rng.choice([f"Ticket {tid} is sorted now, please close it.",
                                    f"You can close {tid}, the issue is fixed.",
                                    f"Please mark ticket {tid} as resolved and close it."]),
                        {"state": [{"path": f"tickets.{tid}.status", "equals": "closed"}], "not_called": [NO_PAGE]},
                        fixtures, 10))
    for n in range(15):
        person = rng.choice(people)
        main, fixtures = own(person, priority="high")
        tid = main["ticket_id"]
        out.append(task(f"tkt-escalate-{n:02d}", "tickets", "escalate_ticket",
                        rng.choice([f"{tid} is urgent: our whole team cannot check out. Escalate it to on-call now.",
                                    f"Please escalate ticket {tid}, it is blocking all our orders.",
                                    f"This is critical, page your on-call engineer about {tid}."]),
                        {"state": [{"path": f"tickets.{tid}.escalated", "equals": True}]}, fixtures, 10))
    for n in range(20):
        person = rng.choice(people)
        problem = rng.choice(PROBLEMS)
        out.append(task(f"tkt-open-{n:02d}", "tickets", "open_ticket",
                        rng.choice([f"{problem.capitalize()}. Please open a ticket; my email is {person['email']}.",
                                    f"Hi, {problem}. Can someone look into it? I'm {person['email']}.",
                                    f"I need a support ticket: {problem}. Account email {person['email']}."]),
                        {"state": [{"path": "tickets.T-5001.customer_email", "equals": person["email"]},
                                   {"path": "tickets.T-5001.status", "equals": "open"},
                                   {"path": "tickets.T-5002", "absent": True}],
                         "not_called": [NO_PAGE]}, {}, 10))
    for n in range(15):
        person = rng.choice(people)
        status = rng.choice(["open", "pending"])
        main, fixtures = own(person, status=status)
        tid = main["ticket_id"]
        out.append(task(f"tkt-complaint-{n:02d}", "tickets", "ticket_status",
                        rng.choice([f"I'm annoyed that {tid} is still not solved. What is happening with it?",
                                    f"Why is nobody answering ticket {tid}? What's its status?",
                                    f"Ticket {tid} has been sitting there for days. Where is it at?"]),
                        {"reply": {"regex": rf"\b{status}\b"}, "not_called": [NO_PAGE],
                         "state": [{"path": f"tickets.{tid}.escalated", "equals": False}]}, fixtures, 10))
    return out


def multi_step_tasks(rng: random.Random, tickets: Tickets, people: list[dict]) -> list[dict]:
    out = []

    def inbox(person: dict, n_open: int, target_status: str = "open") -> tuple[dict, dict, list[dict]]:
        subjects = rng.sample(SUBJECTS, n_open)
        made = [tickets.make(person["email"], s) for s in subjects]
        target = made[rng.randrange(n_open)]
        target["status"] = target_status
        closed = tickets.make(person["email"], rng.choice([s for s in SUBJECTS if s not in subjects]), status="closed")
        everything = sorted([*made, closed], key=lambda t: t["ticket_id"])
        return target, {"tickets": {t["ticket_id"]: t for t in everything}}, [t for t in made if t is not target]

    for n in range(25):
        person = rng.choice(people)
        target, fixtures, others = inbox(person, rng.randint(2, 7))
        other = others[0]
        out.append(task(f"multi-close-{n:02d}", "multi_step", "close_ticket",
                        rng.choice([f"This is {person['email']}. My ticket about the {target['subject']} is resolved, "
                                    "please close it.",
                                    f"Hi, {person['email']} here: you can close my case '{target['subject']}'.",
                                    f"Please close the ticket on {target['subject']} for {person['email']}; "
                                    "the rest stay open."]),
                        {"state": [{"path": f"tickets.{target['ticket_id']}.status", "equals": "closed"},
                                   {"path": f"tickets.{other['ticket_id']}.status", "equals": "open"}],
                         "not_called": [NO_PAGE]}, fixtures, 14))
    for n in range(20):
        person = rng.choice(people)
        target, fixtures, _ = inbox(person, rng.randint(2, 7), target_status="pending")
        out.append(task(f"multi-status-{n:02d}", "multi_step", "ticket_status",
                        rng.choice([f"{person['email']} here: what's the status of my ticket about the "
                                    f"{target['subject']}?",
                                    f"Can you check my case '{target['subject']}'? My email is {person['email']}."]),
                        {"reply": {"regex": r"\bpending\b"}, "not_called": [NO_PAGE]}, fixtures, 14))
    for n in range(15):
        person = rng.choice(people)
        target, fixtures, others = inbox(person, rng.randint(2, 6))
        out.append(task(f"multi-escalate-{n:02d}", "multi_step", "escalate_ticket",
                        f"{person['email']}: my ticket about the {target['subject']} is critical for our business. "
                        "Escalate it to on-call.",
                        {"state": [{"path": f"tickets.{target['ticket_id']}.escalated", "equals": True},
                                   {"path": f"tickets.{others[0]['ticket_id']}.escalated", "equals": False}]},
                        fixtures, 14))
    return out


def build() -> dict[str, str]:
    """The files of the version, by path relative to this folder: the same text on every run."""
    rng = random.Random(SEED)
    people = customers(rng)
    tickets = Tickets(rng)
    tasks = answer_tasks(rng, tickets) + ticket_tasks(rng, tickets, people) + multi_step_tasks(rng, tickets, people)
    return {
        "fixtures/kb.json": json.dumps(kb(), indent=1) + "\n",
        "fixtures/customers.json": json.dumps({"customers": {c["customer_id"]: c for c in people}}, indent=1) + "\n",
        f"{VERSION}.jsonl": "".join(json.dumps(t, ensure_ascii=False, separators=(",", ":")) + "\n" for t in tasks),
    }


def main() -> int:
    files = build()
    manifest = write_version(HERE, VERSION, files, ["kb", "customers"], SLICES, notes=(
        f"generate_tasks.py, seed {SEED}: {len(files[f'{VERSION}.jsonl'].splitlines())} tasks over the shared "
        "fixtures kb and customers"))
    print(f"{VERSION}: {manifest.n_tasks} tasks {manifest.counts_by_slice}, hash {manifest.content_hash[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
