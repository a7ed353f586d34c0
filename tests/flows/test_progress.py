"""Progress while a run selects: a status line redrawn in place on a terminal, plain lines every few
seconds elsewhere (stderr for the command, the flow run's logger in a deployment), and the command's first
line printed once, before the heavy imports."""

from __future__ import annotations

import io
import subprocess
import sys
import time

from flows import progress as progress_module
from flows.launch import first_line
from flows.progress import UnitProgress, duration
from tests.factories import ROOT


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_on_a_terminal_one_status_line_is_redrawn_with_units_rows_rate_cache_hits_and_eta():
    stream, clock = io.StringIO(), Clock()
    bar = UnitProgress(4, 400, stream=stream, live=True, clock=clock).start()
    clock.now += 1.0
    bar.update(100, 25)
    clock.now += 0.1  # within the redraw interval: not drawn
    bar.update(100, 0)
    clock.now += 0.9
    bar.update(100, 0)
    clock.now += 1.0
    bar.update(100, 100)
    bar.finish()
    text = stream.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")  # one line, redrawn with \r
    frames = text.rstrip("\n").split("\r")[1:]
    assert frames[0].startswith("units 0/4 · rows 0/400 · selecting")
    assert frames[1].startswith("units 1/4 · rows 100/400 · 100 rows/s · 25 cached · ETA 3 s")
    assert frames[2].startswith("units 3/4 · rows 300/400 · 150 rows/s · 25 cached · ETA 1 s")
    assert frames[3].startswith("units 4/4 · rows 400/400 · 133 rows/s · 125 cached · done")
    assert frames[4] == "units 4/4 · rows 400/400 · 133 rows/s · 125 cached · done · 3 s"  # finish: the time taken
    assert len(frames) == 5  # the update within 0.2 s of a redraw was not drawn


def test_off_a_terminal_plain_lines_every_few_seconds_then_a_last_one():
    stream, clock = io.StringIO(), Clock()
    lines = UnitProgress(30, 3000, stream=stream, live=False, every_s=10, clock=clock).start()
    for _ in range(30):
        clock.now += 1.0
        lines.update(100)
    lines.finish()
    out = stream.getvalue().splitlines()
    assert all(line.startswith("progress: ") for line in out) and "\r" not in stream.getvalue()
    assert [line.split(" · ")[0] for line in out] == [
        "progress: units 0/30", "progress: units 10/30", "progress: units 20/30", "progress: units 30/30",
        "progress: units 30/30"]
    assert out[1] == "progress: units 10/30 · rows 1,000/3,000 · 100 rows/s · 0 cached · ETA 20 s"


def test_in_a_deployment_the_lines_go_to_the_flow_runs_logger(monkeypatch):
    monkeypatch.setattr(progress_module, "_to_stderr", False)
    stream, logged = io.StringIO(), []
    UnitProgress(1, 10, stream=stream, log=logged.append, live=False).start().finish()
    assert stream.getvalue() == "" and logged[0].startswith("progress: units 0/1") and len(logged) == 2
    monkeypatch.setattr(progress_module, "_to_stderr", True)  # the tooleval command: its own stderr
    UnitProgress(1, 10, stream=stream, log=logged.append, live=False).finish()
    assert stream.getvalue().startswith("progress: units 0/1") and len(logged) == 2


def test_durations_read_as_a_person_writes_them():
    assert [duration(s) for s in (0.4, 7, 65, 3725)] == ["0 s", "7 s", "1 min 05 s", "1 h 02 min"]


def test_the_first_line_is_printed_before_the_heavy_imports():
    assert first_line(["run", "--no-cache", "x.yaml"]) == (
        "tooleval run x.yaml: checking the experiment and its task set ...")
    # the console script on a missing file: the first line comes first, then the bad-input message; the
    # launcher prints it before importing the tool (prefect, duckdb, polars are not loaded by then)
    code = ("import sys, flows.launch as l, flows.progress as p\n"
            "p.announce(l.first_line(sys.argv[1:]))\n"
            "print(sorted(m for m in ('prefect', 'duckdb', 'polars', 'rich') if m in sys.modules))\n")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code, "run", "x.yaml"], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": ""}, timeout=60)
    assert done.stdout.strip() == "[]"
    assert done.stderr.startswith("tooleval run x.yaml: checking")
    assert time.monotonic() - started < 60


def test_a_task_run_counts_runs_and_says_it_runs_tasks():
    stream, clock = io.StringIO(), Clock()
    line = UnitProgress(75, 3750, counted="runs", doing="running tasks", stream=stream, live=False, clock=clock)
    line.start()
    clock.now += 5.0
    line.update(3750)
    line.finish()
    out = stream.getvalue().splitlines()
    assert out[0] == "progress: units 0/75 · runs 0/3,750 · running tasks ..."
    assert out[-1] == "progress: units 1/75 · runs 3,750/3,750 · 750 runs/s · 0 cached · ETA 0 s · 5 s"
