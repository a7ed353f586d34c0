"""The temporary Prefect server's cheaper start: block auto-registration is skipped only when this Prefect
home's database was given the installed block types already (and registration is done again after an
upgrade, or with another database), and the server app is built with the garbage collector held off, then
resumed; what the flow imports after the API answers is imported while the server starts. A real server from a fresh home registers the block types (a user's UI lists them), writes the memo
store, and a second server from that home answers with the same block types without registering again."""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from flows import gc_pause
from flows.prefect_server import BLOCK_REGISTRATION_OFF, LocalServer, blocks_already_registered
from flows.prefect_settings import apply_prefect_defaults
from tests.factories import ROOT


def _home(tmp_path, memo: str | None, dist_age_s: float = 60):
    home, site = tmp_path / "home", tmp_path / "site-packages"
    home.mkdir()
    for name in ("prefect-3.9.1.dist-info", "prefect_dask-0.3.7.dist-info"):
        (site / name).mkdir(parents=True)
        os.utime(site / name, (time.time() - dist_age_s,) * 2)
    if memo is not None:
        (home / "memo_store.toml").write_text(memo)
    return {"PREFECT_HOME": str(home)}, site


def test_registration_is_skipped_only_once_it_is_recorded_after_the_install(tmp_path):
    env, site = _home(tmp_path, 'block_auto_registration = "8e76"\n')
    assert blocks_already_registered(site, env)
    os.utime(site / "prefect_dask-0.3.7.dist-info", None)  # a collection (re)installed after the memo
    os.utime(tmp_path / "home" / "memo_store.toml", (time.time() - 30,) * 2)
    assert not blocks_already_registered(site, env)


@pytest.mark.parametrize("case", ["no memo", "memo without registration", "other database", "user decides",
                                  "profile database"])
def test_registration_runs_when_it_cannot_be_known_done(tmp_path, case):
    memo = None if case == "no memo" else ('other = "x"\n' if case == "memo without registration"
                                           else 'block_auto_registration = "8e76"\n')
    env, site = _home(tmp_path, memo)
    if case == "other database":
        env["PREFECT_API_DATABASE_CONNECTION_URL"] = "postgresql+asyncpg://db/prefect"
    if case == "user decides":
        env["PREFECT_API_BLOCKS_REGISTER_ON_START"] = "true"
    if case == "profile database":
        (tmp_path / "home" / "profiles.toml").write_text(
            '[profiles.default]\nPREFECT_API_DATABASE_CONNECTION_URL = "sqlite+aiosqlite:////elsewhere.db"\n')
    assert not blocks_already_registered(site, env)


def test_the_collector_is_paused_then_resumed_with_the_imported_objects_frozen():
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    try:
        gc_pause.resume()  # never paused: left alone
        assert gc.isenabled() and gc.get_freeze_count() == frozen
        gc_pause.pause()
        assert not gc.isenabled()
        gc_pause.resume()
        assert gc.isenabled() and gc.get_freeze_count() > frozen
    finally:
        gc.unfreeze()
        gc.enable()


def _block_types(api_url: str) -> set[str]:
    request = urllib.request.Request(f"{api_url}/block_types/filter", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return {block["slug"] for block in json.load(response)}


@pytest.mark.slow  # two real Prefect servers: ~20-60 s
def test_a_fresh_home_registers_block_types_and_the_next_server_skips_it(tmp_path, monkeypatch):
    apply_prefect_defaults()
    home = tmp_path / "prefect-home"
    monkeypatch.setenv("PREFECT_HOME", str(home))
    for key in BLOCK_REGISTRATION_OFF:
        monkeypatch.delenv(key, raising=False)
    first = LocalServer().spawn()
    try:
        registered = _block_types(first.wait_ready())
    finally:
        first.stop()
    assert {"local-file-system", "secret"} <= registered
    assert "block_auto_registration" in (home / "memo_store.toml").read_text()
    memo_written = (home / "memo_store.toml").stat().st_mtime
    site = Path(importlib.util.find_spec("prefect").origin).parent.parent
    assert blocks_already_registered(site)
    second = LocalServer().spawn()
    try:
        assert _block_types(second.wait_ready()) == registered
    finally:
        second.stop()
    assert (home / "memo_store.toml").stat().st_mtime == memo_written  # not registered (nor hashed) again


IMPORTS_BEFORE_API = """
import sys
from flows.prefect_server import import_before_api
from tasks.run import prepare_run
prepared = prepare_run.prepare_run(sys.argv[1], checked=False)
before = {name for name in ("pandas", "bm25s", "fastapi.encoders", "prefect.flow_engine") if name in sys.modules}
import_before_api(prepared)
after = {name for name in ("pandas", "bm25s", "fastapi.encoders", "prefect.flow_engine") if name in sys.modules}
print(sorted(before), sorted(after))
"""


def test_what_the_flow_imports_after_the_api_answers_is_imported_before_it():
    done = subprocess.run([sys.executable, "-c", IMPORTS_BEFORE_API, str(ROOT / "benchmarks/peers/one_arm.yaml")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("] [")[1].strip().rstrip("]") == \
        "'bm25s', 'prefect.flow_engine'", done.stdout  # no FastAPI, no pandas: flows/evaluate.py
