"""Fixtures for the hosted-model tests: a fake key in the environment, the loopback server, a run ledger.

Every test here talks to ``tests/provider_server.py`` on 127.0.0.1 through the official SDKs; the
official endpoints are never reachable: selectors are given the loopback ``base_url``, and
``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` point at a closed loopback port for any that is not.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from tasks.selectors.providers.call_budget import RunLedger
from tests.provider_server import ProviderServer, Script, first_tool

FAKE_KEY = "sk-tooleval-FAKE-7d3c9e1a5b2f4086-DO-NOT-LEAK"
"""Distinctive, so a grep of every artifact finds any copy of it."""

MODELS = {"openai": "gpt-4.1-mini-2025-04-14", "anthropic": "claude-haiku-4-5-20251001"}
FAST_RETRIES = {"retry_base_delay_s": 0.01, "retry_max_delay_s": 0.05, "timeout_s": 5.0}


NOWHERE = "http://127.0.0.1:9"
"""The discard port on loopback: a selector given no base_url is refused here, never sent to the internet."""


@pytest.fixture(autouse=True)
def provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{NOWHERE}/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", NOWHERE)
    for name in ("OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)


class ServerFactory:
    def __init__(self) -> None:
        self.servers: list[ProviderServer] = []

    def __call__(self, script: Script = first_tool, latency_s: float = 0.0, api_key: str | None = FAKE_KEY,
                 **quirks: bool) -> ProviderServer:
        """``quirks``: the server's reproductions of real servers' behaviour (``tools_need_choice``,
        ``refuse_null_content``: see tests/provider_server.py)."""
        server = ProviderServer(script, api_key=api_key, latency_s=latency_s, **quirks).__enter__()
        self.servers.append(server)
        return server


@pytest.fixture
def serve() -> Iterator[ServerFactory]:
    """Start loopback servers with a script; all are stopped after the test."""
    factory = ServerFactory()
    yield factory
    for server in factory.servers:
        server.__exit__(None, None, None)


def base_url(server: ProviderServer, kind: str) -> str:
    return server.openai_url if kind == "openai" else server.anthropic_url


def chat_options(server: ProviderServer, kind: str, **extra: Any) -> dict[str, Any]:
    return {"base_url": base_url(server, kind), **FAST_RETRIES, **extra}


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[RunLedger]:
    with RunLedger(tmp_path / "ledger.sqlite", "run-test") as opened:
        yield opened


class InFlight:
    """Counts the callers inside ``with`` at once and the most seen. Callers wait inside for ``meet`` of them
    to be there, so a bound on concurrency is reached by construction, not by sleeping and hoping; a caller
    left alone (a bound lower than ``meet``) fails after ``timeout_s`` with ``BrokenBarrierError``."""

    def __init__(self, meet: int, timeout_s: float = 30.0) -> None:
        self._barrier = threading.Barrier(meet, timeout=timeout_s)
        self._lock = threading.Lock()
        self.now = self.peak = self.entered = 0

    def __enter__(self) -> "InFlight":
        with self._lock:
            self.now += 1
            self.entered += 1
            self.peak = max(self.peak, self.now)
        self._barrier.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self.now -= 1
