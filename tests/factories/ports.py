"""A free TCP port on loopback, for a server a test starts."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listened on when asked (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
