"""Time and peak memory of ``tooleval train`` against the number of requests.

    PYTHONPATH=. nice -n 10 .venv/bin/python benchmarks/train_memory.py [--requests 3000,6000] [--runs 2]
        [--workdir DIR]

For each size, writes a synthetic task set (``benchmarks/synthetic.py``: the bundled support requests with
perturbed texts, every text distinct, the 30 support tools offered) and runs ``tooleval train
VERSION.jsonl --out FILE`` in a child process ``--runs`` times. Prints, per run, the requests, the wall
seconds, the child's peak RSS (``os.wait4``'s resource usage of that child alone: ``ru_maxrss``) and the
1-minute load average when the run ended.

The first run of a size encodes its new texts with MiniLM (kept on disk by content); later runs encode
nothing, so the last run measures training alone: report that one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.synthetic import write_large_taskset  # noqa: E402


def train_once(version: Path, out: Path) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit code) of one ``tooleval train`` child."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "flows.launch", "train", str(version), "--out", str(out)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.stderr.write(child.stderr.read().decode(errors="replace")[-2000:])
    child.stderr.close()
    return seconds, usage.ru_maxrss / 1024, child.returncode  # ru_maxrss is in KB on Linux


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", default="3000,6000", help="comma-separated sizes")
    parser.add_argument("--runs", type=int, default=2, help="runs per size; report the last (encodings cached)")
    parser.add_argument("--workdir", default=None, help="where the synthetic sets go (default: a temporary folder)")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="train-memory-"))
    print("| requests | run | seconds | peak RSS MB | load 1 min | exit |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.requests.split(",")):
        root = workdir / f"synthetic-{size}"
        if not (root / "v1.jsonl").is_file():
            write_large_taskset(root, size)
        for run in range(1, args.runs + 1):
            seconds, rss, code = train_once(root / "v1.jsonl", root / "models" / "hybrid.json")
            print(f"| {size:,} | {run} | {seconds:.1f} | {rss:,.0f} | {os.getloadavg()[0]:.2f} | {code} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
