"""The SDK clients of one process: one per (SDK, base URL, API key, default headers), built on first use and
shared by every work unit and thread that calls that endpoint (building one loads the CA bundle and sets up a
connection pool). The SDK clients are safe to share between threads; time-outs are passed with each request.
The dictionary is keyed by a digest of the API key, never the key itself.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any, Callable, Hashable, TypeVar

Client = TypeVar("Client")

_CLIENTS: dict[Hashable, Any] = {}
_LOCK = threading.Lock()


def shared_client(sdk: str, base_url: str, api_key: str, headers: tuple[tuple[str, str], ...],
                  build: Callable[[], Client]) -> Client:
    """The process's client of ``sdk`` for this endpoint and key, built by ``build`` the first time."""
    key = (sdk, base_url, hashlib.sha256(api_key.encode()).hexdigest(), headers)
    client = _CLIENTS.get(key)
    if client is None:
        with _LOCK:  # the first batch's threads all ask at once
            client = _CLIENTS.get(key)
            if client is None:
                client = _CLIENTS[key] = build()
    return client
