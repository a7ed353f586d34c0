"""The support desk's records: knowledge-base articles, customers, tickets, escalations (the fixtures)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Priority = Literal["low", "normal", "high", "urgent"]
Status = Literal["open", "pending", "closed"]


class Article(BaseModel):
    model_config = ConfigDict(extra="forbid")

    article_id: str = Field(pattern=r"^KB-\d{4}$")
    slug: str
    title: str
    body: str
    locale: Literal["en", "de", "fr"] = "en"


class Customer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    customer_id: str
    email: str
    name: str
    plan: Literal["free", "pro", "enterprise"] = "free"


class Ticket(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ticket_id: str = Field(pattern=r"^T-\d{4}$")
    customer_email: str
    subject: str
    description: str = ""
    status: Status = "open"
    priority: Priority = "normal"
    escalated: bool = False
    resolution: str | None = None


class Escalation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ticket_id: str
    reason: str
    paged: str = "on-call"


class SupportState(BaseModel):
    """Everything the support tools read and write."""

    model_config = ConfigDict(extra="forbid")

    articles: dict[str, Article] = Field(default_factory=dict)
    customers: dict[str, Customer] = Field(default_factory=dict)
    tickets: dict[str, Ticket] = Field(default_factory=dict)
    escalations: list[Escalation] = Field(default_factory=list)
    next_ticket_number: int = 5001


_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset("a an and are can do does for from how i in is it me my of on or the to what when where "
                      "which who why with you your".split())


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1}


def rank_articles(state: SupportState, query: str) -> list[Article]:
    """Articles sharing words with the query, best first (title words count double), ties by id."""
    wanted = words(query)
    scored = []
    for article in state.articles.values():
        score = 2 * len(wanted & words(article.title)) + len(wanted & words(article.body))
        if score:
            scored.append((-score, article.article_id, article))
    return [article for _, _, article in sorted(scored)]


def customer_by_email(state: SupportState, email: str) -> Customer | None:
    return next((c for c in state.customers.values() if c.email.lower() == email.lower()), None)
