"""A real Phoenix server for the tests and the tracing benchmark: ``phoenix serve`` from its own venv
(``make phoenix`` builds ``.venv-phoenix``: Phoenix pins anthropic<2, the project needs anthropic 2), on free
loopback ports, its working directory (SQLite) in a temporary folder, telemetry off.

    with PhoenixServer(tmp_path) as phoenix:
        phoenix.port, phoenix.base_url, phoenix.client()
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx

from tests.factories.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
PHOENIX_BIN = Path(os.environ.get("TOOLEVAL_PHOENIX_BIN", ROOT / ".venv-phoenix" / "bin" / "phoenix"))
START_TIMEOUT_S = 240.0


class PhoenixServer:
    def __init__(self, working_dir: Path) -> None:
        self.working_dir = Path(working_dir)
        self.port = free_port()
        self.grpc_port = free_port()
        self.process: subprocess.Popen | None = None
        self.log_path = self.working_dir / "phoenix.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def otlp(self) -> str:
        return f"otlp://127.0.0.1:{self.port}"

    def __enter__(self) -> "PhoenixServer":
        if not PHOENIX_BIN.exists():
            raise RuntimeError(f"no Phoenix server at {PHOENIX_BIN}: run `make phoenix` (its own venv)")
        self.working_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PHOENIX_WORKING_DIR": str(self.working_dir), "PHOENIX_PORT": str(self.port),
               "PHOENIX_GRPC_PORT": str(self.grpc_port), "PHOENIX_HOST": "127.0.0.1",
               "PHOENIX_TELEMETRY_ENABLED": "false", "DO_NOT_TRACK": "1"}
        env.pop("PHOENIX_SQL_DATABASE_URL", None)
        log = self.log_path.open("wb")
        self.process = subprocess.Popen([str(PHOENIX_BIN), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                        cwd=self.working_dir)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"phoenix serve exited ({self.process.returncode}): "
                                   f"{self.log_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.__exit__(None, None, None)
        raise RuntimeError(f"phoenix serve did not answer within {START_TIMEOUT_S:.0f} s")

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def client(self):
        from phoenix.client import Client

        return Client(base_url=self.base_url)
