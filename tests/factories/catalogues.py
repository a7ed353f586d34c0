"""Tools and what a selector is given: hand-written catalogues, the bundled support tools with their real
JSON schemas, and ``SelectionInput`` built from a request text."""

from __future__ import annotations

import json
from typing import Any, Sequence

from schemas.catalogue import ToolSpec
from schemas.taskset import Message
from tasks.selectors.base import SelectionInput
from tests.factories import SUPPORT

SHOP_TOOLS: list[dict[str, Any]] = [
    {"name": "refund_order", "description": "Refund money for an order that arrived damaged or never arrived."},
    {"name": "track_shipment", "description": "Track where a parcel is and when the delivery will arrive."},
    {"name": "reset_password", "description": "Send a password reset link when the customer cannot log in."},
    {"name": "search_kb", "description": "Search the help centre for policy questions such as the return window."},
]
"""The catalogue 'base' of the small task sets in tests/factories/taskset.py, as written to its JSON file."""

SUPPORT_TOOLS = (
    ToolSpec(name="refund_order", description="Refund a customer's order and return the money to their card."),
    ToolSpec(name="track_shipment", description="Track where a shipment or parcel is and when it will be delivered."),
    ToolSpec(name="reset_password", description="Reset an account password and email a reset link to the user."),
    ToolSpec(name="search_kb", description="Search the knowledge base articles for answers to product questions."),
)
"""Four support tools for the offline routers' tests."""

TRAVEL_TOOLS = (
    ToolSpec(name="book_flight", description="Book a flight ticket between two airports on a date."),
    ToolSpec(name="hotelSearch", description="Find hotel rooms in a city for given check-in and check-out dates."),
)
"""Two travel tools, offered per request beside the support ones."""

TWIN_TOOLS = (
    ToolSpec(name="cancel_order", description="Cancel an order that has not shipped yet."),
    ToolSpec(name="cancelOrder", description="Cancel an order that has not shipped yet."),
)
"""Two tools whose names read as the same words with the same description: any router scores them equal."""

AGENT_PROMPT = "You are the agent."


def support_tools(*names: str) -> tuple[ToolSpec, ...]:
    """Tools of the bundled support catalogues, with their real JSON schemas (all of them when no name is given)."""
    tools: dict[str, ToolSpec] = {}
    for path in sorted((SUPPORT / "catalogues").glob("*.json")):
        for raw in json.loads(path.read_text())["tools"]:
            tools[raw["name"]] = ToolSpec(**raw)
    return tuple(tools[n] for n in names) if names else tuple(tools.values())


def selection_input(text: str, tools: Sequence[ToolSpec] = SUPPORT_TOOLS, request_id: str = "q1",
                    prompt: str = AGENT_PROMPT, earlier: Sequence[tuple[str, str]] = (),
                    messages: Sequence[Message] | None = None) -> SelectionInput:
    """A request as a selector sees it: ``earlier`` (role, text) turns then the user's ``text``, or exactly
    ``messages`` when given."""
    if messages is None:
        messages = [Message(role=r, content=c) for r, c in earlier] + [Message(role="user", content=text)]
    return SelectionInput(request_id=request_id, messages=tuple(messages), tools=tuple(tools), prompt=prompt)
