"""Generate the bundled production log of the Northwind support agent: support_turns.parquet.

A synthetic but realistic log of 12 weeks (ISO weeks 2026-W36..W47, 31 Aug - 22 Nov 2026), one row per
user turn in the documented schema (``schemas.traffic.ProductionTurn``), with:

- a mix that shifts: the dispute tools go live in W42 and take traffic that went to refund_order,
  escalate_to_human, create_ticket and get_ticket_status before; W46 is the 11.11 sale (promo codes and
  gift cards surge, volume x1.5) and W47 carries its deliveries and returns; subscriptions grow slowly;
- production's first tool is the intended one most of the time and a confusable neighbour otherwise
  (~7%), so the tool called is a hint, not a label; a wrong first tool makes retries and hand-offs more
  likely; retries and hand-offs are tracked from W38 on (null before), empty replies throughout;
- request texts from the hand-written v1 requests (reused lightly or heavily perturbed, so some are
  near-duplicates that resampling must drop) and new template phrasings, in many registers;
- fictional personal data to mask: e-mails at example domains, UK drama-range (07700 900xxx) and US 555-01xx
  phone numbers, well-known test card numbers, invented street addresses with postcodes, NW- order ids.

Deterministic: ``python tasksets/support/production/generate_log.py`` rewrites the same file.
"""

from __future__ import annotations

import json
import random
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

import pyarrow.parquet as pq  # noqa: E402

from schemas.arrow import to_arrow_table  # noqa: E402
from schemas.traffic import ProductionTurn  # noqa: E402

SEED = 20261122
START = datetime(2026, 8, 31, tzinfo=timezone.utc)  # Monday of ISO week 2026-W36
WEEKS = 12
FIRST_WEEK = 36
WEEKLY_TURNS = 4_600
DISPUTES_LIVE_WEEK = 42
PROMO_WEEK = 46
SIGNALS_FROM_WEEK = 38
OUT = HERE / "support_turns.parquet"

# True demand: share of tool-calling turns per intent (the tool that would be right), before shifts.
INTENTS = {
    "refund_order": 0.300, "track_shipment": 0.130, "lookup_order": 0.095, "start_return": 0.052,
    "check_refund_status": 0.046, "cancel_order": 0.034, "open_dispute": 0.034, "search_kb": 0.030,
    "cancel_subscription": 0.028, "reset_password": 0.027, "exchange_item": 0.020, "escalate_to_human": 0.019,
    "update_shipping_address": 0.015, "create_ticket": 0.014, "pause_subscription": 0.014,
    "update_account": 0.012, "apply_promo_code": 0.012, "check_gift_card_balance": 0.012,
    "get_ticket_status": 0.011, "update_payment_method": 0.0096, "redeem_gift_card": 0.0094,
    "get_account": 0.009, "change_subscription_plan": 0.009, "get_dispute_status": 0.008,
    "get_subscription": 0.0075, "buy_gift_card": 0.0053, "add_dispute_evidence": 0.005,
    "lookup_article": 0.004, "replace_gift_card": 0.003, "withdraw_dispute": 0.002,
}
NONE_SHARE = 0.075
SUBSCRIPTIONS = ("cancel_subscription", "pause_subscription", "change_subscription_plan", "get_subscription")
DISPUTES = ("open_dispute", "get_dispute_status", "add_dispute_evidence", "withdraw_dispute")
BEFORE_DISPUTES = {  # what production called for dispute requests before the dispute tools existed
    "open_dispute": [("refund_order", 0.6), ("escalate_to_human", 0.25), ("create_ticket", 0.15)],
    "get_dispute_status": [("get_ticket_status", 0.7), ("check_refund_status", 0.3)],
    "add_dispute_evidence": [("create_ticket", 0.8), ("escalate_to_human", 0.2)],
    "withdraw_dispute": [("create_ticket", 0.6), ("escalate_to_human", 0.4)],
}
PROMO_BOOST = {"apply_promo_code": 6.0, "buy_gift_card": 3.0, "redeem_gift_card": 2.0, "lookup_order": 1.3,
               "cancel_order": 1.3, "search_kb": 1.3}
AFTER_PROMO_BOOST = {"track_shipment": 1.4, "start_return": 1.25, "check_gift_card_balance": 1.5, "exchange_item": 1.2}
CONFUSION = 0.07
CONFUSABLE = {
    "refund_order": ["start_return", "check_refund_status", "open_dispute"], "start_return": ["refund_order", "exchange_item"],
    "exchange_item": ["start_return"], "track_shipment": ["lookup_order"], "lookup_order": ["track_shipment"],
    "cancel_order": ["refund_order", "cancel_subscription"], "check_refund_status": ["refund_order"],
    "search_kb": ["lookup_article"], "lookup_article": ["search_kb"], "create_ticket": ["escalate_to_human"],
    "escalate_to_human": ["create_ticket"], "get_ticket_status": ["get_dispute_status", "check_refund_status"],
    "update_account": ["update_payment_method", "get_account"], "get_account": ["update_account"],
    "update_payment_method": ["update_account"], "reset_password": ["update_account"],
    "update_shipping_address": ["update_account"], "apply_promo_code": ["redeem_gift_card"],
    "open_dispute": ["refund_order"], "get_dispute_status": ["get_ticket_status"],
    "add_dispute_evidence": ["create_ticket"], "withdraw_dispute": ["open_dispute"],
    "cancel_subscription": ["cancel_order", "pause_subscription"], "pause_subscription": ["cancel_subscription"],
    "change_subscription_plan": ["get_subscription"], "get_subscription": ["change_subscription_plan"],
    "check_gift_card_balance": ["redeem_gift_card"], "redeem_gift_card": ["apply_promo_code", "check_gift_card_balance"],
    "buy_gift_card": ["check_gift_card_balance"], "replace_gift_card": ["check_gift_card_balance"],
    "none": ["search_kb", "escalate_to_human"],
}
WEEKDAY = [1.15, 1.10, 1.05, 1.0, 0.95, 0.85, 0.90]
HOURS = [0.2, 0.1, 0.1, 0.1, 0.1, 0.2, 0.4, 0.8, 1.2, 1.6, 1.9, 1.9, 1.8, 1.7, 1.6, 1.5, 1.4, 1.4, 1.5, 1.7, 1.8,
         1.5, 1.0, 0.5]

# -- fictional personal data -----------------------------------------------------------------------------
FIRST = ["dana", "sam", "priya", "tom", "ana", "li", "maria", "kofi", "ellen", "raj", "zoe", "omar", "hannah", "jack",
         "noor", "lucas", "amelia", "ben", "chloe", "mateo", "ines", "yusuf", "grace", "piotr", "aisha", "leo"]
LAST = ["reid", "okafor", "patel", "nguyen", "silva", "brown", "kowalski", "haddad", "murphy", "fischer", "khan",
        "jones", "garcia", "lindqvist", "mensah", "rossi", "evans", "tanaka", "ahmed", "moreau"]
DOMAINS = ["example.com", "example.org", "example.net", "mail.example.com", "post.example.co.uk"]
STREETS = ["Harbour", "Orchard", "Elm", "Mill", "Station", "Church", "Victoria", "Kingfisher", "Maple", "Bridge",
           "Castle", "Rowan", "Meadow", "Chapel", "Willow", "Park View", "Highfield", "Brook"]
SUFFIXES = ["Lane", "Road", "Street", "Close", "Avenue", "Way", "Drive", "Crescent", "Gardens", "Terrace", "Court"]
TOWNS = [("Leeds", "LS"), ("Bristol", "BS"), ("Leicester", "LE"), ("Norwich", "NR"), ("York", "YO"),
         ("Cardiff", "CF"), ("Brighton", "BN"), ("Sheffield", "S"), ("Exeter", "EX"), ("Glasgow", "G")]
TEST_CARDS = ["4111 1111 1111 1111", "4242 4242 4242 4242", "5555 5555 5555 4444", "5105-1051-0510-5100",
              "4000 0566 5566 5556", "3782 822463 10005", "6011 1111 1111 1117"]
ITEMS = ["linen set", "garden hose", "espresso machine", "running tights", "oak table", "wine glasses", "rug",
         "desk lamp", "kettle", "duvet cover", "desk chair", "headphones", "air fryer", "yoga mat", "paddling pool",
         "toaster", "bookshelf", "blender", "bath towels", "phone case", "coffee table", "garden lights", "trainers",
         "winter coat", "cast iron pan", "bedside table", "storage boxes", "baby monitor"]
CODES = ["SAVE10", "WELCOME15", "NEWS10", "FREESHIP", "AUTUMN20", "SINGLES20", "1111SALE", "STUDENT10"]
PLANS = ["Coffee Club", "Plus", "Snack Box", "Pet Food Plus", "Coffee Club decaf"]


class Faker:
    """Fictional values for the template slots."""

    def __init__(self, rng: random.Random):
        self.r = rng

    def order(self) -> str:
        return f"NW-{self.r.randint(1_000_000, 9_999_999)}"

    def email(self) -> str:
        first, last = self.r.choice(FIRST), self.r.choice(LAST)
        local = self.r.choice([f"{first}.{last}", f"{first}{last[0]}", f"{first}.{last[0]}", f"{first}{self.r.randint(1, 99)}"])
        return f"{local}@{self.r.choice(DOMAINS)}"

    def phone(self) -> str:
        n = self.r.randint(0, 999)
        return self.r.choice([f"07700 900{n:03d}", f"+44 7700 900{n:03d}", f"(555) 01{n % 100:02d}-{self.r.randint(1000, 9999)}",
                              f"07700900{n:03d}"])

    def card(self) -> str:
        return self.r.choice(TEST_CARDS)

    def address(self) -> str:
        town, area = self.r.choice(TOWNS)
        street = f"{self.r.randint(1, 240)} {self.r.choice(STREETS)} {self.r.choice(SUFFIXES)}"
        postcode = f"{area}{self.r.randint(1, 19)} {self.r.randint(1, 9)}{self.r.choice('ABDEFGHJLNPQRSTUWXYZ')}{self.r.choice('ABDEFGHJLNPQRSTUWXYZ')}"
        return self.r.choice([f"{street}, {town} {postcode}", f"{street}, {town}", f"{street.lower()} {postcode.lower()}",
                              f"{street}, Flat {self.r.randint(1, 30)}, {town} {postcode}"])

    def __getitem__(self, name: str) -> str:
        """A fresh value for slot ``name`` (so ``str.format_map(faker)`` fills a template)."""
        r = self.r
        values = {
            "order": self.order, "email": self.email, "phone": self.phone, "card": self.card, "address": self.address,
            "name": lambda: r.choice(FIRST).title(), "item": lambda: r.choice(ITEMS), "item2": lambda: r.choice(ITEMS),
            "days": lambda: str(r.randint(2, 16)), "amount": lambda: f"£{r.randint(6, 320)}.{r.choice(['00', '99', '49', '50'])}",
            "code": lambda: r.choice(CODES), "ticket": lambda: f"CS-{r.randint(100000, 999999)}",
            "kb": lambda: f"KB-{r.randint(1000, 1999)}", "dispute": lambda: f"DP-{r.randint(17000, 23999)}",
            "gift": lambda: f"GC-{r.randint(1, 9)}{''.join(r.choice('ABCDEFGHJKMNPQRSTVWXYZ') for _ in range(3))}-"
                            f"{r.randint(10, 99)}{''.join(r.choice('ABCDEFGHJKMNPQRSTVWXYZ') for _ in range(2))}",
            "plan": lambda: r.choice(PLANS), "size": lambda: r.choice(["8", "10", "12", "14", "M", "L", "XL", "42", "9"]),
            "colour": lambda: r.choice(["sage", "navy", "black", "oat", "terracotta", "grey", "mustard"]),
            "date": lambda: r.choice(["the 3rd", "last Tuesday", "Friday", "the 14th", "two weeks ago", "yesterday", "the 28th"]),
        }
        return values[name]()


# -- new phrasings per intent (slots in braces) -----------------------------------------------------------
TEMPLATES: dict[str, list[str]] = {
    "refund_order": [
        "my {item} arrived broken, I want a refund for {order}",
        "The {item} from order {order} stopped working after {days} days. I'd like my money back please.",
        "hi, one of the {item} in my parcel was missing. can you refund that part",
        "you charged me {amount} but the checkout said less. refund the difference",
        "parcel never turned up, tracking has said delivered for {days} days. refund pls",
        "{item} came smashed to pieces. don't want a replacement, refund to my card",
        "the price of the {item} dropped right after I bought it ({order}), can I get the difference back",
        "I paid for next day delivery and it took {days} days. refund the delivery charge",
        "want my money back for the {item}, it's nothing like the photos and it's faulty",
        "refund {order} please, it arrived damaged and the box was soaked",
        "Got the wrong {item} and I needed it for an event that's now passed. Just refund me.",
        "the {item} has a crack down the side. photos attached. refund",
        "Hello, I was charged twice for {order}?? please refund one of them",
        "item missing from order {order}, the invoice lists it but it wasn't in the box",
    ],
    "track_shipment": [
        "where is my parcel? order {order}",
        "when will {order} arrive",
        "tracking hasn't updated in {days} days, is my {item} lost?",
        "is my delivery coming today? I need to know if I should stay in",
        "the courier says out for delivery since this morning, where is it",
        "my {item} was supposed to come {date}, still nothing",
        "can you give me the tracking number for my {item}",
        "whats the delivery window for {order}",
        "parcel stuck in the depot for a week. where is it actually",
        "hi can u check where my order is, it's the {item}",
        "has my order shipped yet and when does it get here? {order}",
        "Tracking says 'exception'. What does that mean for my parcel {order}?",
    ],
    "lookup_order": [
        "what did I order {date}? can't remember",
        "can you check the status of order {order}",
        "did my order go through? I got charged but no confirmation email",
        "what's in order {order}, I want to check the sizes",
        "I don't have my order number, my email is {email}. can you find my last order",
        "has {order} been dispatched yet or is it still processing",
        "how many {item} did I order, the email doesn't say",
        "show me my recent orders",
        "is the {item} on backorder? my order still says processing",
        "what payment method did I use on {order}",
    ],
    "start_return": [
        "I want to return the {item}, it's too big",
        "how do I send back {order}? changed my mind",
        "need a return label for the {item} please",
        "can I return the {item} even though I've opened it",
        "the {item} doesn't suit our room, I'd like to send it back",
        "I want to return 2 items from order {order}",
        "please arrange a collection for the {item}, it's too heavy to take to the post office",
        "return the {item} please, it was a gift and they already have one",
        "start a return for {order}, wrong size",
    ],
    "check_refund_status": [
        "where is my refund for {order}",
        "I returned the {item} {days} days ago and still no refund",
        "when will my refund come through",
        "you said you refunded me but it's not in my bank",
        "has the refund for {order} been processed yet",
        "refund status pls",
        "how long do refunds take to show on my card? it's been {days} days",
        "I cancelled {order} last week, where's my money",
    ],
    "cancel_order": [
        "cancel my order {order}",
        "please cancel the {item} before it ships",
        "I ordered the wrong thing, cancel it please",
        "can I still cancel {order}? just placed it",
        "cancel the whole order, found it cheaper elsewhere",
        "i dont need the {item} anymore, cancel pls",
        "I ordered twice by mistake, cancel one of them",
        "cancel order",
    ],
    "open_dispute": [
        "there's a charge of {amount} from Northwind on my card that I didn't make",
        "I don't recognise order {order}, someone used my card. dispute it",
        "I was charged twice for the same order and want to dispute the second charge",
        "unknown payment to NORTHWIND GOODS on my statement, wasn't me",
        "you refused my refund but the {item} was faulty, I want to formally dispute the charge",
        "someone got into my account and ordered stuff, I want these charges disputed",
        "my card was charged {amount} for an order I cancelled, I'm raising a dispute",
        "contest the charge on {date} please, I never authorised it",
    ],
    "search_kb": [
        "what's your returns policy for sale items",
        "do you deliver to Northern Ireland",
        "how long is the warranty on the {item}",
        "can I pay with klarna",
        "do you price match",
        "how do I clean the {item}",
        "what are your opening hours over christmas",
        "is there a student discount",
        "do you ship internationally and how much is customs",
        "how does click and collect work",
        "are the terms of the 11.11 sale different for returns",
    ],
    "cancel_subscription": [
        "cancel my {plan} subscription",
        "I want to stop {plan}, too expensive now",
        "please end my subscription, I'm moving abroad",
        "stop charging me for {plan}",
        "how do I cancel {plan}? I don't use it",
        "cancel coffee club and refund this month",
    ],
    "reset_password": [
        "I forgot my password",
        "can't log in, send me a reset link",
        "password reset email never arrives",
        "locked out of my account after too many tries",
        "reset my password please, email is {email}",
        "the reset link says expired",
        "new phone and I can't get into my account",
    ],
    "exchange_item": [
        "can I swap the {item} for a size {size}",
        "I got the wrong colour, I wanted {colour}. can you exchange it",
        "exchange the {item} for a bigger one please",
        "the {item} is too small, can I get a {size} instead",
        "swap my {colour} {item} for the black one",
    ],
    "escalate_to_human": [
        "I want to speak to a real person",
        "put me through to a human agent now",
        "this is ridiculous, get me a manager",
        "I've explained this {days} times. human please",
        "can I talk to someone on the phone? my number is {phone}",
        "agent",
        "I'm not talking to a bot about this, escalate it",
    ],
    "update_shipping_address": [
        "change the delivery address on {order} to {address}",
        "I've moved, please send {order} to {address} instead",
        "wrong address on my order! it should be {address}",
        "can I change where my {item} is delivered? new address {address}",
        "please update the address for order {order}, flat number is missing",
    ],
    "create_ticket": [
        "your website crashes every time I try to check out",
        "I need a VAT invoice for {order} for my company",
        "the {item} gets really hot, I think it's a safety issue",
        "the size guide for the {item} is wrong",
        "I want to make a complaint about the courier's behaviour",
        "the app won't load my order history, please log it",
        "the confirmation emails come through blank",
    ],
    "pause_subscription": [
        "pause my {plan} for a month",
        "skip next month's {plan} delivery",
        "I'm away for {days} days, hold my subscription",
        "can I pause {plan} until January",
        "put my subscription on hold please",
    ],
    "update_account": [
        "change my email to {email}",
        "update my phone number to {phone}",
        "my name is spelled wrong on my account",
        "unsubscribe me from marketing emails",
        "please update my account email, the old one was {email}",
        "change my default delivery address to {address}",
    ],
    "apply_promo_code": [
        "apply code {code} to my basket",
        "my promo code {code} isn't working",
        "can you add the {code} discount to my order",
        "I forgot to use {code} on {order}, can you apply it",
        "is the 11.11 code {code} valid on the {item}",
        "the SINGLES20 code says invalid but the sale is on",
        "use discount code {code} please",
    ],
    "check_gift_card_balance": [
        "how much is left on gift card {gift}",
        "balance of my gift card please {gift}",
        "whats on my gift card {gift}",
        "check the balance of {gift} and {gift}",
        "do I have enough on {gift} for the {item}",
    ],
    "get_ticket_status": [
        "any update on ticket {ticket}?",
        "what's happening with my complaint {ticket}",
        "I raised a case last week and heard nothing, ref {ticket}",
        "status of my support ticket please",
        "is {ticket} still open",
    ],
    "update_payment_method": [
        "update my card to the new one, my old one expired",
        "change my payment card to {card}",
        "please use my new card for future orders",
        "my card on file is out of date",
        "remove my old card and add a new one, number {card}",
    ],
    "redeem_gift_card": [
        "use my gift card {gift} on order {order}",
        "add gift card {gift} to my account",
        "redeem {gift} please",
        "I want to pay with my gift card {gift}",
        "put {gift} towards my basket",
    ],
    "get_account": [
        "what email is on my account",
        "what's my default delivery address",
        "do you have my phone number on file",
        "which email is this chat linked to",
        "show me my account details",
    ],
    "change_subscription_plan": [
        "switch my {plan} to the annual plan",
        "change my {plan} to every two weeks",
        "downgrade me from Plus to the basic plan",
        "can I upgrade {plan} to the bigger box",
        "move me to the monthly plan",
    ],
    "get_dispute_status": [
        "any news on my dispute {dispute}",
        "what's the status of the dispute about the double charge",
        "I opened a dispute {days} days ago, what's happening",
        "is dispute {dispute} resolved yet",
    ],
    "get_subscription": [
        "when does my {plan} renew",
        "how much am I paying for {plan}",
        "what's included in my subscription",
        "when is my next {plan} delivery",
    ],
    "buy_gift_card": [
        "I'd like to buy a £{days}0 gift card for my mum",
        "can I send a gift card by email to {email}",
        "buy a gift card please, 50 pounds",
        "do you sell physical gift cards? I want one for a birthday",
        "get me a digital gift card for the 11.11 sale, £25",
    ],
    "add_dispute_evidence": [
        "here's my bank statement for dispute {dispute}",
        "I have photos for my dispute, can you add them",
        "attach the courier's email to my open dispute {dispute}",
        "more evidence for the double charge dispute: screenshot of both payments",
    ],
    "lookup_article": [
        "can you open article {kb}",
        "send me the help article about returns",
        "pull up the page about delivery times",
        "show me {kb} please",
    ],
    "replace_gift_card": [
        "my gift card code is scratched off and unreadable",
        "I lost the gift card email, can you resend it",
        "the gift card I received doesn't work, says invalid {gift}",
        "gift card damaged, need a new one",
    ],
    "withdraw_dispute": [
        "cancel my dispute {dispute}, I got the refund",
        "close the dispute please, it was my mistake",
        "withdraw dispute {dispute}, the charge was my partner",
    ],
    "none": [
        "thanks!",
        "ok great, that's all",
        "hello",
        "what's the weather like in Leeds tomorrow",
        "tell me a joke",
        "can you write a poem about autumn",
        "is Argos open on Sunday",
        "lol",
        "never mind",
        "who won the match last night",
        "how do I make sourdough",
        "you're very helpful",
        "can you recommend a good film",
        "what's 15% of 80",
    ],
}
OPENERS = ["", "", "", "hi, ", "hello, ", "hey ", "Hi there. ", "Good morning, ", "hiya ", "Hello Northwind, ",
           "sorry to bother you but ", "quick question - ", "URGENT: ", "Hi, I hope you're well. "]
CLOSERS = ["", "", "", " thanks", " thank you", " pls", " asap", "!!", " cheers", " Thanks in advance.", " ty",
           ". This is the second time I'm asking.", ". Kind regards, {name}", " 🙏", "?"]
PII_TAILS = [" my email is {email}", " you can call me on {phone}", " (account email {email})", " my number is {phone}",
             " I live at {address}"]
SYNONYMS = [("refund", "money back"), ("parcel", "package"), ("order", "purchase"), ("please", "pls"),
            ("cancel", "stop"), ("return", "send back"), ("thank you", "thanks"), ("arrived", "came")]
GREETINGS = [
    ("hi", "Hi! I'm Northwind's assistant. How can I help today?"),
    ("hello?", "Hello! What can I do for you?"),
    ("I need help with something", "Of course — what do you need help with?"),
]
FOLLOWUPS = [
    ("where is my order {order}", "It's with the courier and due tomorrow. Anything else?"),
    ("what's your returns window", "You have 30 days to return most items. Anything else I can help with?"),
    ("can you check my account email", "Your account email is {email}. Anything else?"),
    ("did my payment go through for {order}", "Yes, the payment for {order} was taken on Monday. Anything else?"),
]


def fill(text: str, fake: Faker) -> str:
    """The text with a fresh value in each ``{slot}``, drawn left to right."""
    return text.format_map(fake)


def typo(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    candidates = [i for i, w in enumerate(words) if len(w) > 4 and w.isalpha()]
    if not candidates:
        return text
    i = rng.choice(candidates)
    w = words[i]
    k = rng.randint(1, len(w) - 2)
    words[i] = rng.choice([w[:k] + w[k + 1] + w[k] + w[k + 2:], w[:k] + w[k + 1:], w[:k] + w[k] + w[k:]])
    return " ".join(words)


def perturb(text: str, rng: random.Random, fake: Faker, heavy: bool) -> str:
    import re

    text = re.sub(r"NW-\d{7}", lambda _: fake.order(), text)
    if heavy:
        for a, b in rng.sample(SYNONYMS, 3):
            if a in text and rng.random() < 0.7:
                text = text.replace(a, b, 1)
        text = fill(rng.choice(OPENERS), fake) + text + fill(rng.choice(CLOSERS), fake)
    if rng.random() < 0.5:
        text = typo(text, rng)
    if rng.random() < 0.3:
        text = text.lower()
    if rng.random() < 0.3:
        text = text.rstrip(".!?")
    return text


class TextBank:
    """Request texts for an intent: reused v1 requests (perturbed) or new template phrasings."""

    def __init__(self, rng: random.Random, fake: Faker):
        self.rng, self.fake = rng, fake
        self.v1: dict[str, list[dict]] = {}
        for line in (HERE.parent / "v1.jsonl").read_text().splitlines():
            request = json.loads(line)
            self.v1.setdefault(request["expected"], []).append(request)

    def conversation(self, intent: str) -> tuple[list[dict[str, str]], str]:
        """(earlier turns, user message)."""
        rng, fake = self.rng, self.fake
        earlier: list[dict[str, str]] = []
        pool = self.v1.get(intent, [])
        if pool and rng.random() < 0.3:
            request = rng.choice(pool)
            messages = request["messages"]
            heavy = rng.random() < 0.5
            earlier = [{"role": m["role"], "content": perturb(m["content"], rng, fake, False) if m["role"] == "user"
                        else m["content"]} for m in messages[:-1]]
            message = perturb(messages[-1]["content"], rng, fake, heavy)
        else:
            message = fill(rng.choice(OPENERS), fake) + fill(rng.choice(TEMPLATES[intent]), fake) \
                + fill(rng.choice(CLOSERS), fake)
            if rng.random() < 0.35:
                message = typo(message, rng)
            if rng.random() < 0.25:
                message = message.lower()
        if rng.random() < 0.06:
            message += fill(rng.choice(PII_TAILS), fake)
        if not earlier and rng.random() < 0.10:
            user, assistant = rng.choice(GREETINGS + FOLLOWUPS)
            earlier = [{"role": "user", "content": fill(user, fake)}, {"role": "assistant", "content": fill(assistant, fake)}]
        return earlier, message


def week_mix(week_index: int) -> dict[str, float]:
    """Intent shares of one week (tool-calling intents sum to 1 - NONE_SHARE, plus 'none')."""
    week = FIRST_WEEK + week_index
    mix = dict(INTENTS)
    for tool in SUBSCRIPTIONS:
        mix[tool] *= 1 + 0.03 * week_index
    if week == PROMO_WEEK:
        for tool, boost in PROMO_BOOST.items():
            mix[tool] *= boost
    if week == PROMO_WEEK + 1:
        for tool, boost in AFTER_PROMO_BOOST.items():
            mix[tool] *= boost
    total = sum(mix.values())
    shares = {tool: (1 - NONE_SHARE) * share / total for tool, share in mix.items()}
    shares["none"] = NONE_SHARE
    return shares


def production_tool(intent: str, week: int, rng: random.Random) -> str:
    """What the live agent called first for this intent in this week."""
    disputes_live = week > DISPUTES_LIVE_WEEK or (week == DISPUTES_LIVE_WEEK and rng.random() < 0.5)
    if intent in DISPUTES and not disputes_live:
        r, acc = rng.random(), 0.0
        for tool, p in BEFORE_DISPUTES[intent]:
            acc += p
            if r < acc:
                return tool
    confusion = CONFUSION * (1.6 if week == PROMO_WEEK and intent in ("apply_promo_code", "redeem_gift_card") else 1.0)
    if rng.random() < confusion:
        options = [t for t in CONFUSABLE[intent] if disputes_live or t not in DISPUTES]
        if options:
            return rng.choice(options)
    return intent


def generate() -> list[dict]:
    rng = random.Random(SEED)
    fake = Faker(rng)
    bank = TextBank(rng, fake)
    turns: list[dict] = []
    for week_index in range(WEEKS):
        week = FIRST_WEEK + week_index
        n = int(WEEKLY_TURNS * (1 + 0.01 * week_index) * (1.5 if week == PROMO_WEEK else 1.0))
        mix = week_mix(week_index)
        monday = START + timedelta(weeks=week_index)
        for _ in range(n):
            day = rng.choices(range(7), weights=WEEKDAY, k=1)[0]
            hour = rng.choices(range(24), weights=HOURS, k=1)[0]
            time = monday + timedelta(days=day, hours=hour, seconds=rng.randint(0, 3599))
            intent = rng.choices(list(mix), weights=list(mix.values()), k=1)[0]
            earlier, message = bank.conversation(intent)
            tool = production_tool(intent, week, rng)
            empty = rng.random() < 0.006
            if empty:
                tool = "none"
            wrong = tool != intent or empty
            tracked = week >= SIGNALS_FROM_WEEK
            retried = (rng.random() < (0.40 if wrong else 0.05)) if tracked else None
            handed = (rng.random() < (0.9 if tool == "escalate_to_human" else 0.25 if wrong else 0.03)) if tracked else None
            turns.append({
                "turn_id": "", "time": time, "user_message": message, "earlier_turns": earlier, "first_tool": tool,
                "conversation_id": f"c-{rng.getrandbits(40):010x}", "user_retried": retried,
                "handed_to_human": handed, "empty_reply": empty,
            })
    turns.sort(key=lambda t: t["time"])
    for number, turn in enumerate(turns, start=1):
        turn["turn_id"] = f"t{number:07d}"
    return turns


def main() -> None:
    turns = generate()
    ProductionTurn.model_validate(turns[0])
    table = to_arrow_table(ProductionTurn, turns)
    pq.write_table(table, OUT, compression="zstd", compression_level=19, row_group_size=16_384)
    print(f"{len(turns):,} turns, {turns[0]['time']:%Y-%m-%d} .. {turns[-1]['time']:%Y-%m-%d} -> {OUT} "
          f"({OUT.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
