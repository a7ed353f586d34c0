"""A request text's identity as a decision model's examples record it: what leakage and cross-fitting compare,
readable without the numerical stack."""

from __future__ import annotations

import hashlib
import re

_SPACES = re.compile(r"\s+")


def text_hash(text: str) -> str:
    """sha256 of the request text, trimmed, lower case, runs of white space as one space."""
    return hashlib.sha256(_SPACES.sub(" ", text.strip().lower()).encode()).hexdigest()
