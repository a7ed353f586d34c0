"""Tool names as a provider accepts them, mapped back reversibly.

OpenAI and Anthropic accept tool names matching ``^[a-zA-Z0-9_-]{1,64}$``: no dots (BFCL's
``math.hypot``), no spaces or slashes, at most 64 characters. ``ToolNameMap`` turns every offered name
into a wire name that fits and maps the model's reply back to the original:

- allowed names pass unchanged (most catalogues never notice);
- each forbidden character becomes ``_`` (``math.hypot`` -> ``math_hypot``);
- a name that is still too long is cut and ends in ``_`` + 8 hex digits of its sha256;
- when two offered names would meet on one wire name (``a.b`` and ``a_b``), the later one gets the hash
  suffix too, so the map stays one-to-one for every offered set.

The map lives for one request: the reply is read back through the same map that built the request.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Iterable

MAX_LENGTH = 64
ALLOWED = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_FORBIDDEN_CHAR = re.compile(r"[^a-zA-Z0-9_-]")
_SUFFIX_LENGTH = 9  # "_" + 8 hex digits


def _hashed(name: str, base: str, max_length: int) -> str:
    suffix = "_" + hashlib.sha256(name.encode()).hexdigest()[:8]
    return base[: max_length - _SUFFIX_LENGTH] + suffix


def wire_name(name: str, max_length: int = MAX_LENGTH) -> str:
    """The provider-safe form of one name (without collision handling)."""
    if len(name) <= max_length and ALLOWED.match(name):
        return name
    base = _FORBIDDEN_CHAR.sub("_", name) or "tool"
    if len(base) <= max_length:
        return base
    return _hashed(name, base, max_length)


@dataclass
class ToolNameMap:
    """A one-to-one map between offered tool names and the names sent on the wire."""

    to_wire: dict[str, str] = field(default_factory=dict)
    to_original: dict[str, str] = field(default_factory=dict)

    @classmethod
    def for_names(cls, names: Iterable[str], max_length: int = MAX_LENGTH) -> "ToolNameMap":
        mapping = cls()
        for name in names:
            if name in mapping.to_wire:
                continue
            candidate = wire_name(name, max_length)
            if candidate in mapping.to_original:
                candidate = _hashed(name, _FORBIDDEN_CHAR.sub("_", name), max_length)
            mapping.to_wire[name] = candidate
            mapping.to_original[candidate] = name
        return mapping

    def wire(self, name: str) -> str:
        return self.to_wire[name]

    def original(self, wire: str) -> str | None:
        """The offered tool a wire name stands for; None for a name that was never offered."""
        return self.to_original.get(wire)
