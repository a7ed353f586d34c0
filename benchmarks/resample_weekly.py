"""Speed of resampling the bundled production log (no Prefect): read + mask, weights, draw, label checks,
publish — on a throwaway copy of tasksets/support. Also masking throughput and the near-duplicate index.

    .venv/bin/python benchmarks/resample_weekly.py
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tasks.traffic.mask_personal_data import Masker  # noqa: E402
from tasks.traffic.near_duplicates import NearDuplicateIndex, conversation_text  # noqa: E402
from tasks.traffic.read_turns import TrafficSource, read_turns  # noqa: E402
from tasks.traffic.resample_version import (  # noqa: E402
    check_resample,
    draw_resample,
    load_traffic_config,
    publish_resample,
    resample_settings,
)
from tasks.traffic.window import parse_window  # noqa: E402

NOW = datetime(2026, 11, 30, 9, tzinfo=timezone.utc)


def timed(label: str, fn):
    start = time.perf_counter()
    value = fn()
    print(f"{label:<44} {time.perf_counter() - start:7.2f} s")
    return value


def main() -> None:
    support = ROOT / "tasksets" / "support"
    log = TrafficSource(support / "production" / "support_turns.parquet")
    all_turns = timed("read + validate the whole log (12 weeks)", lambda: read_turns(log, None))
    print(f"{'':<44} {len(all_turns):,} turns")
    window = timed("read + validate one 4-week window", lambda: read_turns(log, parse_window("2026-W44-W47")))
    masker = Masker(load_traffic_config(support).masking)
    texts = [t.user_message for t in window]
    start = time.perf_counter()
    for text in texts:
        masker.mask(text)
    elapsed = time.perf_counter() - start
    print(f"{'mask user messages':<44} {elapsed:7.2f} s  ({len(texts) / elapsed:,.0f} texts/s)")
    sample = [conversation_text(masker.mask_messages(t.earlier_turns)) + masker.mask(t.user_message)
              for t in window[:1500]]
    index = NearDuplicateIndex(0.7, sample[:600])
    start = time.perf_counter()
    hits = sum(index.similar(text) for text in sample[600:])
    elapsed = time.perf_counter() - start
    print(f"{'near-duplicate lookups, 900 vs 600 texts':<44} {elapsed:7.2f} s  ({900 / elapsed:,.0f} lookups/s, {hits} hits)")

    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "support"
        shutil.copytree(support, copy)
        settings = timed("settings (newest turn, window, plan)", lambda: resample_settings(copy, now=NOW))
        draft = timed("draw (read, mask, weights, dedupe, sample)", lambda: draw_resample(copy, settings))
        timed("label checks on the draft (GE, first import)", lambda: check_resample(draft))
        timed("label checks on the draft (GE, warm)", lambda: check_resample(draft))
        summary = timed("publish (version, weights, queue, summary)", lambda: publish_resample(draft))
        print(f"{'':<44} {summary.version}: {sum(t.sampled for t in summary.per_tool)} requests from "
              f"{summary.n_turns:,} turns, window {summary.window.id}")


if __name__ == "__main__":
    main()
