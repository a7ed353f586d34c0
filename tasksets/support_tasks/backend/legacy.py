"""The support desk's legacy surface: eight tools, a cursor to carry, an id to carry, a strict lookup."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tasks.surface.toolkit import Page, Toolkit, ToolRefused, tool

from .support_state import Escalation, Priority, SupportState, Ticket, customer_by_email, rank_articles

TicketId = Annotated[str, Field(pattern=r"^T-\d{4}$", description="Ticket id, e.g. T-1042.")]
Email = Annotated[str, Field(json_schema_extra={"format": "email"}, description="The customer's email address.")]
Cursor = Annotated[str | None, Field(description="next_cursor of the previous page; omit for the first page.")]


class LegacySupport(Toolkit):
    state_model = SupportState
    page_size = 3

    @tool
    def search_kb(self, query: Annotated[str, Field(min_length=2, description="Words to search for.")],
                  cursor: Cursor = None) -> Page:
        """Search the help-center knowledge base for how-to and policy questions (refunds, returns, shipping,
        delivery, passwords, sign-in, invoices, plans, subscriptions, gift cards, warranty, privacy, payments).
        Returns article ids, titles and snippets, three per page; call again with next_cursor while has_more
        is true."""
        found = [{"article_id": a.article_id, "title": a.title, "snippet": a.body[:60]}
                 for a in rank_articles(self.state, query)]
        return self.paginate(found, cursor)

    @tool
    def lookup_article(self, slug: Annotated[str, Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", max_length=40,
                                                        description="The article's slug, e.g. refund-timelines.")],
                       locale: Annotated[str, Field(pattern=r"^(en|de|fr)$", description="Locale: en, de or fr.")]) -> dict:
        """Look up a help-center article about a policy or how-to topic by its slug and locale."""
        self.read()
        article = next((a for a in self.state.articles.values() if a.slug == slug and a.locale == locale), None)
        if article is None:
            raise ToolRefused(f"no article with slug '{slug}' in locale {locale}")
        return {"article_id": article.article_id, "title": article.title, "body": article.body}

    @tool
    def get_article(self, article_id: Annotated[str, Field(pattern=r"^KB-\d{4}$", description="Article id, e.g. KB-0012.")]) -> dict:
        """Get the full text of a help-center article by its article id (as search_kb returns it)."""
        self.read()
        article = self.state.articles.get(article_id)
        if article is None:
            raise ToolRefused(f"no article {article_id}")
        return {"article_id": article.article_id, "title": article.title, "body": article.body}

    @tool(writes=True, handoff=True)
    def create_ticket(self, customer_email: Email,
                      subject: Annotated[str, Field(min_length=3, max_length=120, description="One line.")],
                      description: Annotated[str, Field(min_length=3, description="What happened.")],
                      priority: Priority = "normal") -> dict:
        """Open a support ticket for a customer; a support agent picks it up."""
        self.read()
        if customer_by_email(self.state, customer_email) is None:
            raise ToolRefused(f"no customer with email {customer_email}")
        ticket_id = f"T-{self.state.next_ticket_number:04d}"
        self.state.next_ticket_number += 1
        self.state.tickets[ticket_id] = Ticket(ticket_id=ticket_id, customer_email=customer_email, subject=subject,
                                               description=description, priority=priority)
        return {"ticket_id": ticket_id, "status": "open"}

    @tool(irreversible=True, handoff=True)
    def escalate_ticket(self, ticket_id: TicketId,
                        reason: Annotated[str, Field(min_length=3, description="Why it is urgent.")]) -> dict:
        """Escalate a ticket: opens a P1 and pages the on-call engineer."""
        self.read()
        ticket = self.state.tickets.get(ticket_id)
        if ticket is None:
            raise ToolRefused(f"no ticket {ticket_id}")
        if ticket.status == "closed":
            raise ToolRefused(f"ticket {ticket_id} is closed; reopen it before escalating")
        if ticket.escalated:
            raise ToolRefused(f"ticket {ticket_id} is already escalated")
        ticket.escalated, ticket.priority = True, "urgent"
        self.state.escalations.append(Escalation(ticket_id=ticket_id, reason=reason))
        return {"ticket_id": ticket_id, "escalated": True, "paged": "on-call"}

    @tool(writes=True)
    def close_ticket(self, ticket_id: TicketId,
                     resolution: Annotated[str, Field(description="How it was resolved.")] = "resolved") -> dict:
        """Close a ticket."""
        self.read()
        ticket = self.state.tickets.get(ticket_id)
        if ticket is None:
            raise ToolRefused(f"no ticket {ticket_id}")
        if ticket.status == "closed":
            raise ToolRefused(f"ticket {ticket_id} is already closed")
        ticket.status, ticket.resolution = "closed", resolution
        return {"ticket_id": ticket_id, "status": "closed"}

    @tool
    def list_open_tickets(self, customer_email: Email, cursor: Cursor = None) -> Page:
        """List a customer's open and pending tickets, three per page; call again with next_cursor while
        has_more is true."""
        tickets = [{"ticket_id": t.ticket_id, "subject": t.subject, "status": t.status}
                   for t in sorted(self.state.tickets.values(), key=lambda t: t.ticket_id)
                   if t.customer_email.lower() == customer_email.lower() and t.status != "closed"]
        return self.paginate(tickets, cursor)

    @tool
    def get_ticket(self, ticket_id: TicketId) -> dict:
        """Get one ticket by its id: subject, status, priority, escalation."""
        self.read()
        ticket = self.state.tickets.get(ticket_id)
        if ticket is None:
            raise ToolRefused(f"no ticket {ticket_id}")
        return ticket.model_dump()
