"""Failures that are not bad input still end with one message and exit 6, never a traceback: a full disk
(SQLite may only say 'disk I/O error'), a dead or lost Prefect API; Prefect's own log records print no
traceback; the drill's kill hook kills exactly where it is told."""

from __future__ import annotations

import errno
import io
import logging
import os
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import flows.crash as crash
from flows.cli import main
from flows.exit_codes import EXIT_CRASHED
from flows.prefect_settings import no_traceback
from schemas.selection.rows import Selection
from tasks.run.result_cache import ResultCache
from tasks.selection.select_batch import SELECTIONS
from tests.drill.bad_inputs import root_can_mount
from tests.factories import ROOT
from tests.factories.taskset import write_experiment, write_taskset


def crash_message(error: BaseException, paths=()) -> str:
    stderr = io.StringIO()
    saved, sys.stderr = sys.stderr, stderr
    try:
        assert crash.report_crash(error, paths) == EXIT_CRASHED
    finally:
        sys.stderr = saved
    return stderr.getvalue()


@pytest.fixture
def full_disk(tmp_path):
    """A 2 MiB tmpfs filled to the last block (root only: a container that may mount)."""
    if not root_can_mount():
        pytest.skip("needs root and a tmpfs mount to fill a disk for real")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], check=True)
    try:
        ResultCache(mount / "cache" / "selections.sqlite", SELECTIONS).close()  # the cache exists; the disk then fills
        with open(mount / "filler", "wb", buffering=0) as filler:
            try:
                while True:
                    filler.write(b"\0" * 4096)
            except OSError as error:
                assert error.errno == errno.ENOSPC
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_full_disk_under_the_selection_cache_is_named_a_full_disk(full_disk):
    with pytest.raises(OSError) as raised:
        with ResultCache(full_disk / "cache" / "selections.sqlite", SELECTIONS) as cache:
            cache.put_many([(f"key-{i}", Selection(request_id=f"r{i}", chosen="refund_order", latency_ms=1.0, detail="x" * 500)) for i in range(2000)])
    assert raised.value.errno == errno.ENOSPC and "selections.sqlite" in str(raised.value)
    message = crash_message(raised.value, [full_disk])
    assert "the disk is full" in message and "Traceback" not in message


def test_a_full_disk_under_duckdb_is_named_a_full_disk(full_disk):
    import duckdb

    with pytest.raises(duckdb.Error) as raised:
        con = duckdb.connect(str(full_disk / "tooleval.duckdb"))
        con.execute("CREATE TABLE t AS SELECT repeat('x', 200) AS s FROM range(200000)")
        con.execute("CHECKPOINT")
    assert "the disk is full" in crash_message(raised.value, [full_disk])


def test_disk_io_error_is_a_full_disk_only_when_the_disk_is_nearly_full(tmp_path, monkeypatch):
    error = sqlite3.OperationalError("disk I/O error")
    assert "the disk is full" not in crash_message(error, [tmp_path])  # this disk has room: say no more than we know

    class Usage:
        free = 1024

    monkeypatch.setattr(crash.shutil, "disk_usage", lambda path: Usage())
    wrapped = RuntimeError("task failed")
    wrapped.__cause__ = error  # found through the exception chain, as Prefect re-raises it
    assert "the disk is full" in crash_message(wrapped, [tmp_path])


def test_a_dead_prefect_api_url_is_said_at_once_with_exit_6(tmp_path, monkeypatch, capsys):
    experiment = write_experiment(write_taskset(tmp_path / "shop"))
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    code = main(["run", str(experiment), "--warehouse", str(tmp_path / "wh")])
    err = capsys.readouterr().err
    assert code == EXIT_CRASHED and "refuses connections" in err and "127.0.0.1:9" in err
    assert "Traceback" not in err and not (tmp_path / "wh").exists()


WATCHED = textwrap.dedent("""
    import socket, sys, time
    from flows.prefect_server import ApiWatch
    listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen()
    port = listener.getsockname()[1]
    with ApiWatch(f"http://127.0.0.1:{port}/api", None, interval_s=0.05):
        listener.close()  # the API goes away
        time.sleep(120)   # the watch ends the process long before this
    print("not ended")
""")


def test_a_lost_api_ends_the_process_with_exit_6_and_one_message():
    done = subprocess.run([sys.executable, "-c", WATCHED], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == EXIT_CRASHED and "not ended" not in done.stdout
    assert "stopped answering (connection refused)" in done.stderr and "rerun the same command" in done.stderr
    assert "Traceback" not in done.stderr


STOPPED_ON_SIGNAL = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    from flows import stop_on_signal
    from flows.prefect_server import ApiWatch

    class Server:  # the temporary server: it exits with -15 once the signal's stop has sent SIGTERM
        what = "temporary Prefect server"

        def exited(self):
            return "exited with code -15" if stop_on_signal._stopping else None

    stop_on_signal.install()
    # a child that ignores SIGTERM holds the stop for its whole grace (1 s) while the watch polls every 0.05 s
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                                 "signal.SIG_IGN); print('ignoring', flush=True); time.sleep(60)"],
                                stdout=subprocess.PIPE, text=True)
    assert stubborn.stdout.readline().strip() == "ignoring"  # SIGTERM ignored from here on
    with ApiWatch("http://127.0.0.1:9/api", Server(), interval_s=0.05):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(120)
    print("not ended")
""")


def test_a_server_ended_by_the_signal_stop_is_not_reported_lost():
    """CI at the last stop: Ctrl-C's stop SIGTERMs the temporary server; the API watch saw it exit with -15 and ended
    the process with exit 6 and 'failed: the temporary Prefect server exited' before the stop's own 130."""
    done = subprocess.run([sys.executable, "-c", STOPPED_ON_SIGNAL], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 130, done.stderr
    assert "stopped by SIGINT" in done.stderr and "failed:" not in done.stderr and "not ended" not in done.stdout


def test_prefect_log_records_print_their_message_without_the_traceback():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(no_traceback)
    logger = logging.getLogger("prefect.task_runs.drill")
    logger.addHandler(handler)
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError:
            logger.error("Task run failed with exception: OSError", exc_info=True)
        logger.error("Crash detected!\nTraceback (most recent call last):\n  File x\nOSError: boom")
    finally:
        logger.removeHandler(handler)
    printed = stream.getvalue()
    assert "Task run failed with exception: OSError" in printed and "Crash detected!" in printed
    assert "Traceback" not in printed


KILLED_AT = textwrap.dedent("""
    from tasks.drill_points import reached
    for step in range(3):
        reached("unit-landed", f"unit {step}")
        print(f"after {step}", flush=True)
""")


def test_the_drill_hook_kills_at_the_nth_time_a_point_is_reached_and_logs_first(tmp_path):
    log = tmp_path / "points.log"
    done = subprocess.run([sys.executable, "-c", KILLED_AT], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TOOLEVAL_DRILL_KILL_AT": "unit-landed:2",
                               "TOOLEVAL_DRILL_LOG": str(log)})
    assert done.returncode == -9 and done.stdout.split() == ["after", "0"]
    assert log.read_text().splitlines() == ["unit-landed\tunit 0", "unit-landed\tunit 1"]
    unset = subprocess.run([sys.executable, "-c", KILLED_AT], cwd=ROOT, capture_output=True, text=True, timeout=120,
                           env={k: v for k, v in {**os.environ, "PYTHONPATH": str(ROOT)}.items()
                                if not k.startswith("TOOLEVAL_DRILL")})
    assert unset.returncode == 0 and unset.stdout.count("after") == 3
    assert Path(log).read_text().count("\n") == 2  # nothing logged when the hook is unset


def test_a_publish_that_times_out_says_what_publishing_again_does_not_that_a_run_resumes(monkeypatch, capsys,
                                                                                          tmp_path):
    """`tooleval phoenix` failing on a read timeout (Phoenix busy) is not a run: no rows landed, nothing to
    resume; the message says a service did not answer in time and that publishing again adds what is missing."""
    import httpx

    from flows import api
    from flows.cli import main

    def times_out(*args, **kwargs):
        raise httpx.ReadTimeout("timed out")

    monkeypatch.setattr(api, "publish_to_phoenix", times_out)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # gettempdir() reads TMPDIR once per process
    assert main(["phoenix", "--warehouse", str(tmp_path / "wh")]) == EXIT_CRASHED
    err = capsys.readouterr().err
    assert "did not answer in time" in err and "publishing again adds only what is missing" in err
    assert "landed rows" not in err and "rerun resumes" not in err
