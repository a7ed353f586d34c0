"""The user's cache folder for what tooleval computes once and keeps by content (label-check passes,
embeddings): ``$TOOLEVAL_CACHE_DIR``, else ``$XDG_CACHE_HOME/tooleval``, else ``~/.cache/tooleval``. Nothing
in it is needed: deleting it costs only the time to compute again."""

from __future__ import annotations

import os
from pathlib import Path


def cache_folder(kind: str) -> Path:
    """``<cache>/<kind>`` (not created here)."""
    if explicit := os.environ.get("TOOLEVAL_CACHE_DIR"):
        return Path(explicit) / kind
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tooleval" / kind
