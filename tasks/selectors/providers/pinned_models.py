"""Pinned model ids: refuse aliases that can silently move to a new snapshot, and check what was served.

A comparison is only worth its cost if the model under each arm is the same on every call and on the
rerun. Providers serve *aliases* (``gpt-4.1``, ``claude-3-5-sonnet-latest``, ``chatgpt-4o-latest``) that
they repoint to new snapshots without notice; only dated snapshot ids stay fixed:

- OpenAI: ``<family>-YYYY-MM-DD`` (``gpt-4.1-mini-2025-04-14``), or the older ``-MMDD`` form (``gpt-4-0613``);
- Anthropic: before the Claude 4.6 generation ``<family>-YYYYMMDD`` (``claude-haiku-4-5-20251001``); from
  4.6 on, every id is itself a fixed snapshot (``claude-sonnet-4-6``, ``claude-opus-5``: "Model IDs and
  versions" in Anthropic's docs), while a bare family name (``claude-sonnet``) is not.

``pinned_problem`` returns why an id is refused, with the dated id to use when one is known. For a
self-hosted server (``base_url``) whose ids carry no date, an arm states ``model_revision`` (e.g. the
weights' commit) or ``unpinned_reason``; ``unpinned_why`` says which arms ran unpinned (their cached results
are reported as possibly stale). ``served_problem`` compares a reply's model id with the pin.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Mapping

ServedEvidence = Literal["reported", "not_reported", "echoes_request"]
"""What a reply proves about the model that answered (``served_evidence``)."""

OPENAI_DATED = re.compile(r"-(\d{4}-\d{2}-\d{2}|0\d{3}|1[0-2]\d{2})$")
ANTHROPIC_DATED = re.compile(r"-\d{8}(-v\d+(:\d+)?)?$")
ANTHROPIC_UNDATED_SNAPSHOT = re.compile(r"^claude-[a-z]+-(\d+)(?:-(\d+))?$")
"""claude-{name}-{major}[-{minor}]: a fixed snapshot from the 4.6 generation on."""

KNOWN_SNAPSHOTS: dict[str, str] = {
    # OpenAI aliases -> the dated snapshot they pointed to when this table was written (2026-11-01)
    "gpt-4o": "gpt-4o-2024-11-20",
    "gpt-4o-mini": "gpt-4o-mini-2024-07-18",
    "chatgpt-4o-latest": "gpt-4o-2024-11-20",
    "gpt-4.1": "gpt-4.1-2025-04-14",
    "gpt-4.1-mini": "gpt-4.1-mini-2025-04-14",
    "gpt-4.1-nano": "gpt-4.1-nano-2025-04-14",
    "gpt-5": "gpt-5-2025-08-07",
    "gpt-5-mini": "gpt-5-mini-2025-08-07",
    "gpt-5-nano": "gpt-5-nano-2025-08-07",
    "gpt-5-chat-latest": "gpt-5-2025-08-07",
    "gpt-5.1": "gpt-5.1-2025-11-13",
    "gpt-5.2": "gpt-5.2-2025-12-11",
    "gpt-5.2-pro": "gpt-5.2-pro-2025-12-11",
    "gpt-5.4-mini": "gpt-5.4-mini-2026-03-17",
    "gpt-5.4-nano": "gpt-5.4-nano-2026-03-17",
    "gpt-5.5": "gpt-5.5-2026-04-23",
    "o3": "o3-2025-04-16",
    "o3-mini": "o3-mini-2025-01-31",
    "o4-mini": "o4-mini-2025-04-16",
    # Anthropic aliases of the generations before 4.6
    "claude-sonnet-4-5": "claude-sonnet-4-5-20250929",
    "claude-haiku-4-5": "claude-haiku-4-5-20251001",
    "claude-opus-4-5": "claude-opus-4-5-20251101",
    "claude-opus-4-1": "claude-opus-4-1-20250805",
    "claude-opus-4-0": "claude-opus-4-20250514",
    "claude-sonnet-4-0": "claude-sonnet-4-20250514",
    "claude-3-7-sonnet-latest": "claude-3-7-sonnet-20250219",
    "claude-3-5-sonnet-latest": "claude-3-5-sonnet-20241022",
    "claude-3-5-haiku-latest": "claude-3-5-haiku-20241022",
}

FAMILY_EXAMPLES = {
    "openai": "gpt-4.1-mini-2025-04-14",
    "anthropic": "claude-haiku-4-5-20251001 (or, from the 4.6 generation on, claude-sonnet-4-6)",
}


def _suggestion(model_id: str, provider: str) -> str:
    if model_id in KNOWN_SNAPSHOTS:
        return f"use the dated id '{KNOWN_SNAPSHOTS[model_id]}'"
    stripped = re.sub(r"-latest$", "", model_id)
    if stripped in KNOWN_SNAPSHOTS:
        return f"use the dated id '{KNOWN_SNAPSHOTS[stripped]}'"
    return (f"use a dated snapshot id such as '{FAMILY_EXAMPLES.get(provider, 'family-YYYY-MM-DD')}' "
            "(the provider's models endpoint lists them)")


def pinned_problem(provider: str, model_id: str, options: Mapping[str, Any] | None = None,
                   custom_server: bool = False) -> str | None:
    """Why ``model_id`` is not a pinned id for ``provider`` ('openai' / 'anthropic'); None when it is."""
    options = options or {}
    if "latest" in model_id.lower().split("-") or model_id.lower().endswith("latest"):
        return f"'{model_id}' is an alias that moves to each new snapshot; {_suggestion(model_id, provider)}"
    if custom_server and (options.get("model_revision") or options.get("unpinned_reason")):
        return None
    if provider == "openai":
        if OPENAI_DATED.search(model_id):
            return None
    elif provider == "anthropic":
        if ANTHROPIC_DATED.search(model_id):
            return None
        snapshot = ANTHROPIC_UNDATED_SNAPSHOT.match(model_id)
        if snapshot and model_id not in KNOWN_SNAPSHOTS:
            major, minor = int(snapshot.group(1)), int(snapshot.group(2) or 0)
            if (major, minor) >= (4, 6):
                return None
    else:
        raise ValueError(f"unknown provider {provider}")
    hint = _suggestion(model_id, provider)
    if custom_server:
        hint += ", or state `model_revision` (the weights' commit) or `unpinned_reason` in the arm's options"
    return f"'{model_id}' is not a pinned snapshot (a family name or alias can change under you); {hint}"


def unpinned_why(provider: str | None, model_id: str, options: Mapping[str, Any] | None = None) -> str | None:
    """Why an arm's model may answer differently under the same id from one run to the next (so results its
    earlier runs cached may no longer be what the server would answer), or None when it is pinned.

    Pinned: an offline selector or agent (``provider`` None: its answers are its code's), a dated snapshot id,
    a self-hosted model whose weights the arm names (``model_revision``). Unpinned: a self-hosted id with no date
    that the arm runs with ``unpinned_reason`` (an id the official hosts serve undated is refused before a run).
    """
    options = options or {}
    if provider not in ("openai", "anthropic") or options.get("model_revision"):
        return None
    if pinned_problem(provider, model_id) is None:
        return None
    reason = options.get("unpinned_reason")
    return f"unpinned_reason: {reason}" if reason else f"'{model_id}' is not a pinned snapshot"


def arm_unpinned(arm: Any) -> str | None:
    """``unpinned_why`` of a resolved arm: its provider, pinned model id and options."""
    return unpinned_why(arm.provider, arm.model_id, arm.options)


def served_problem(pinned: str, served: str | None, options: Mapping[str, Any] | None = None) -> str | None:
    """Why a reply's served model id breaks the pin; None when it matches.

    Matches: equal ids, or the id the arm declares the server reports (``options.served_model``)."""
    options = options or {}
    expected = options.get("served_model") or pinned
    if served is None:
        return None if options.get("served_model") is None else f"the server reported no model id, expected '{expected}'"
    if served == expected:
        return None
    return (f"served model '{served}' differs from the pinned '{expected}': the rung's answers would come from "
            "another model; no further calls are sent for this model in this run")


def served_evidence(requested: str, served: str | None, custom_server: bool) -> ServedEvidence:
    """What one reply's model id says about the model that answered it.

    - ``not_reported``: the reply carried no model id: nothing was checked;
    - ``echoes_request``: a self-hosted server (any ``base_url`` off the official hosts) reported exactly the
      id it was asked for. llama-cpp-python echoes whatever id is requested, whatever weights it loaded, so
      this proves nothing (a vLLM or Ollama server reporting its own name cannot be told apart by one reply);
    - ``reported``: the provider reported an id the pin check compared (an official host, or a self-hosted
      server that reported an id other than the request's, e.g. the ``served_model`` an arm declares).
    """
    if not served:
        return "not_reported"
    if custom_server and served == requested:
        return "echoes_request"
    return "reported"
