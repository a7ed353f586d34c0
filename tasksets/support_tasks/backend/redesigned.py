"""The redesigned surface: five tools. Search and read are one call (no id to carry), ticket listing
pages by itself (no cursor to carry), the ticket actions keep their names."""

from __future__ import annotations

import math
import re
from typing import Annotated, Literal

from pydantic import Field

from tasks.surface.toolkit import Toolkit, ToolRefused, tool

from .support_state import Escalation, Priority, SupportState, Ticket, customer_by_email, rank_articles

TicketId = Annotated[str, Field(pattern=r"^T-\d{4}$", description="Ticket id, e.g. T-1042.")]
Email = Annotated[str, Field(json_schema_extra={"format": "email"}, description="The customer's email address.")]
UPSTREAM_PAGE = 3
"""The services behind these tools still serve three records a page: every page fetched is a read."""


class RedesignedSupport(Toolkit):
    state_model = SupportState

    def _pages(self, n_records: int) -> None:
        self.read(max(1, math.ceil(n_records / UPSTREAM_PAGE)))

    @tool
    def find_answer(self, question: Annotated[str, Field(min_length=2, description="The customer's question.")]) -> dict:
        """Answer a how-to or policy question from the help center (refunds, returns, shipping, delivery,
        passwords, sign-in, invoices, plans, subscriptions, gift cards, warranty, privacy, payments), or show
        an article by its id: returns the best matching article in full (id, title, text) and the titles of
        the next best."""
        named = re.search(r"KB-\d{4}", question)
        if named:
            self.read()
            article = self.state.articles.get(named.group(0))
            if article is None:
                raise ToolRefused(f"no article {named.group(0)}")
            return {"article_id": article.article_id, "title": article.title, "body": article.body, "also": []}
        ranked = rank_articles(self.state, question)
        self._pages(len(ranked))
        if not ranked:
            raise ToolRefused("no help-center article matches; ask the customer to rephrase")
        self.read()
        best = ranked[0]
        return {"article_id": best.article_id, "title": best.title, "body": best.body,
                "also": [a.title for a in ranked[1:3]]}

    @tool
    def find_tickets(self, customer_email: Email,
                     status: Literal["open", "closed", "any"] = "open") -> dict:
        """Find a customer's tickets (open and pending ones by default), all at once: id, subject, status,
        priority, whether escalated."""
        mine = [t for t in sorted(self.state.tickets.values(), key=lambda t: t.ticket_id)
                if t.customer_email.lower() == customer_email.lower()]
        self._pages(len(mine))
        if status == "open":
            mine = [t for t in mine if t.status != "closed"]
        elif status == "closed":
            mine = [t for t in mine if t.status == "closed"]
        return {"tickets": [{"ticket_id": t.ticket_id, "subject": t.subject, "status": t.status,
                             "priority": t.priority, "escalated": t.escalated} for t in mine]}

    @tool(writes=True, handoff=True)
    def open_ticket(self, customer_email: Email,
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

    @tool(writes=True)
    def close_ticket(self, ticket_id: TicketId,
                     resolution: Annotated[str, Field(description="How it was resolved.")] = "resolved") -> dict:
        """Close a ticket the customer says is resolved."""
        self.read()
        ticket = self.state.tickets.get(ticket_id)
        if ticket is None:
            raise ToolRefused(f"no ticket {ticket_id}")
        if ticket.status == "closed":
            raise ToolRefused(f"ticket {ticket_id} is already closed")
        ticket.status, ticket.resolution = "closed", resolution
        return {"ticket_id": ticket_id, "status": "closed"}

    @tool(irreversible=True, handoff=True)
    def escalate_ticket(self, ticket_id: TicketId,
                        reason: Annotated[str, Field(min_length=3, description="Why it is urgent.")]) -> dict:
        """Escalate a ticket: opens a P1 and pages the on-call engineer. Only when the customer asks for it
        or the case is urgent."""
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
