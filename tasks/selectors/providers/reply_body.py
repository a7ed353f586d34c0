"""The body of an HTTP 200 from a provider, checked before it is read as a reply.

Real servers and proxies answer 200 with bodies that are no reply at all:

- an error object: ``{"error": {...}}`` with no ``choices`` (OpenAI-compatible servers and proxies), or
  ``{"type": "error", "error": {...}}`` (Anthropic's Messages API, e.g. an overload reported mid-stream by
  a gateway). Raised as ``ErrorInBody``: an *error* row, never cached; retried like a 5xx unless the error
  says the request itself is wrong (invalid request, authentication, permission, not found);
- a body that is not JSON (a proxy's HTML page, a truncated body): ``BodyNotJSON``, retried like a 5xx.

Both carry no secret: the message is the provider's, scrubbed by the caller like any other.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

NOT_RETRIED_KINDS = ("invalid_request", "authentication", "permission", "not_found", "request_too_large")
"""Error kinds that say the request itself is wrong: sending it again would fail the same way."""


class ErrorInBody(Exception):
    """An HTTP 200 whose JSON body is an error object."""

    status_code = None

    def __init__(self, body: Mapping[str, Any]):
        self.body = dict(body)
        inner = body.get("error")
        inner = inner if isinstance(inner, Mapping) else {"message": str(inner) if inner is not None else ""}
        self.kind = str(inner.get("type") or inner.get("code") or "error")
        self.message = str(inner.get("message") or "")
        super().__init__(self.message or self.kind)

    @property
    def retryable(self) -> bool:
        return not any(word in self.kind for word in NOT_RETRIED_KINDS)


class BodyNotJSON(Exception):
    """An HTTP 200 whose body is not a JSON object (an HTML page, a cut-off body)."""

    status_code = None

    def __init__(self, content_type: str, text: str):
        self.content_type = content_type or "no content type"
        super().__init__(f"the body begins {text.strip()[:60]!r}")


def reply_json(content: bytes, content_type: str | None, provider: str) -> dict[str, Any]:
    """The reply's JSON object; raises ``BodyNotJSON`` or ``ErrorInBody`` for a 200 that is no reply."""
    try:
        data = json.loads(content)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BodyNotJSON(content_type or "", content[:200].decode("utf-8", "replace")) from None
    if not isinstance(data, dict):
        raise BodyNotJSON(content_type or "", content[:200].decode("utf-8", "replace"))
    if provider == "anthropic":
        if data.get("type") == "error" or ("error" in data and not data.get("content")):
            raise ErrorInBody(data)
    elif "error" in data and data["error"] is not None and not data.get("choices"):
        raise ErrorInBody(data)
    return data
