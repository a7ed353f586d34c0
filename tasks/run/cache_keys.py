"""What every instrument's cache keys are made of: a digest of canonical JSON, the options that change an
answer (secrets left out) and the tools in the order they are offered.

Which options change an answer is the instrument's to say (options that only change how calls are made or
costed are left out, e.g. tasks/selectors/arm_options.py: ``answer_options``), so changing those repeats no
completed call. The digests are those of earlier versions, so existing caches keep answering.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from schemas.catalogue import ToolSpec
from tasks.files.content_hash import sha256_hex

SECRET_OPTION_WORDS = ("key", "token", "secret", "password")

_SECRET_OPTION_NAME = re.compile(r"(^|_)(" + "|".join(SECRET_OPTION_WORDS) + r")(_|$)", re.IGNORECASE)
"""Whole words only: 'api_key' and 'auth_token' are dropped, 'max_tokens' (it changes answers) is kept."""


def digest(value: Any) -> str:
    """sha256 of the value as canonical JSON (sorted keys, not ASCII escaped, default separators)."""
    return sha256_hex(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str))


def keyed_options(options: dict[str, Any]) -> dict[str, Any]:
    """An arm's options that change an answer (its instrument's choice), without any whose name says it
    holds a secret."""
    return {k: v for k, v in options.items() if not _SECRET_OPTION_NAME.search(k)}


def tools_fingerprint(tools: Iterable[ToolSpec]) -> str:
    return digest([tool.model_dump() for tool in tools])
