"""Seeds as recorded permutations of the tool order.

A seed defines one total order over tool names (sort by sha256 of "seed:name"), so any offered set of
tools — a whole catalogue or one request's own tools — is permuted consistently, and the order is
recorded per (run, arm, seed) in the ``seed_orders`` table.
"""

from __future__ import annotations

import hashlib
from typing import Sequence

from schemas.catalogue import ToolSpec
from tasks.files.content_hash import sha256_hex


def seed_key(seed: int, tool_name: str) -> bytes:
    return hashlib.sha256(f"{seed}:{tool_name}".encode()).digest()


def permute_tools(tools: Sequence[ToolSpec], seed: int) -> tuple[ToolSpec, ...]:
    """The tools in the seed's order."""
    return tuple(sorted(tools, key=lambda tool: seed_key(seed, tool.name)))


def tool_set_id(names: Sequence[str]) -> str:
    """A short stable id of a set of tool names (order-independent)."""
    return sha256_hex("\n".join(sorted(names)))[:16]
