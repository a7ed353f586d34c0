"""`make prefect-server` on a port other than 4200 serves a UI that calls the API on that port.

Prefect's UI asks the server where the API is (`/ui-settings`): `PREFECT_UI_API_URL`, else `PREFECT_API_URL`,
else `PREFECT_SERVER_API_HOST`/`PREFECT_SERVER_API_PORT`, never `--port`. The recipe sets them from
`PREFECT_HOST`/`PREFECT_PORT`; the test starts it on a free port with a profile-like `PREFECT_API_URL`
pointing at 4200 in the environment (the case the docs warn about) and reads what the UI is given.
Slow: a real server (~10-40 s)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.factories import ROOT
from tests.factories.ports import free_port
from tests.factories.prefect_api import migrated_home

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("make") is None, reason="needs make")]


def test_the_ui_of_make_prefect_server_calls_the_api_on_its_own_port(tmp_path):
    port = free_port()
    env = {**os.environ, "PREFECT_HOME": str(migrated_home(tmp_path / "prefect-home")),  # no first-start migration
           "PREFECT_API_URL": "http://127.0.0.1:4200/api"}   # what a profile or an old export may hold
    # -o: never (re)install from here; BIN: this interpreter's venv
    command = ["make", "-s", "-C", str(ROOT), "-o", ".venv/.installed", "prefect-server",
               f"PREFECT_PORT={port}", f"BIN={Path(sys.executable).parent}"]
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        settings, deadline = None, time.monotonic() + 180
        while time.monotonic() < deadline and server.poll() is None:
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/ui-settings", timeout=2)
                if answer.status_code == 200:
                    settings = answer.json()
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        assert settings is not None, server.stdout.read().decode() if server.poll() is not None else "no answer"
        assert settings["api_url"] == f"http://127.0.0.1:{port}/api"
        assert httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=5).json() is True
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=10)
