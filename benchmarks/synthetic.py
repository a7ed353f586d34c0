"""Synthetic data for the speed benchmarks: a large task set in the project's format, and selection rows.

- ``write_large_taskset``: a task set folder (catalogues, prompt and weights copied from the bundled
  ``tasksets/support``; a frozen ``v1`` whose requests are the support requests with perturbed texts, every
  text distinct; adjudications copied for every relabelled request) plus a lexical ladder experiment.
- ``selection_row_batches``: Arrow tables shaped exactly like ``SelectionRow`` (``schemas.arrow``), generated
  with numpy, for millions of rows: 4 arms (the support ladder 18 -> 30 tools), 3 seeds, 2 slices, ~80%
  correct, wrong answers concentrated on a few confusable neighbours per tool, probabilities NULL.
- ``warehouse_records``: the runs / production_weights / offered_tools records those rows join to.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schemas.arrow import arrow_schema  # noqa: E402
from schemas.catalogue import NONE_LABEL  # noqa: E402
from schemas.run_records import ComparisonRecord
from schemas.selection.rows import OfferedTool, SelectionRow, SelectionRunRecord, WeightRecord
from tasks.run.permute_tools import tool_set_id  # noqa: E402
from tasks.taskset.load_taskset import freeze_version  # noqa: E402

SUPPORT = ROOT / "tasksets" / "support"
WEIGHTS_WINDOW = "2026-W36-W47"
LADDER = [("base-18", "base"), ("disputes-22", "disputes"), ("subscriptions-26", "subscriptions"),
          ("giftcards-30", "giftcards")]
"""(arm, catalogue) of the support ladder; each rung extends the one before it."""

# --------------------------------------------------------------------------------------------------
# A large task set
# --------------------------------------------------------------------------------------------------

_PREFIXES = ["", "Hi, ", "Hello, ", "Hey there. ", "Good morning! ", "Quick question: ", "Hi team, ",
             "Sorry to bother you, ", "Urgent: ", "Hello support, ", "Hiya - ", "Dear Northwind, "]
_SUFFIXES = ["", " Thanks.", " Thank you!", " Cheers", " Thanks in advance.", " Regards, Sam",
             " Many thanks, Priya", " Please reply soon.", " (sent from my phone)", " Best, Jonas",
             " ty", " Appreciate it."]


def _perturb(text: str, rng: random.Random) -> str:
    body = text.strip()
    style = rng.randrange(4)
    if style == 1:
        body = body.lower()
    elif style == 2:
        body = body.rstrip(".!?")
    elif style == 3:
        body = body.rstrip(".!?") + "!!"
    if not body.strip(" !"):
        body = text.strip()  # "????" stays a question-mark-only request
    return f"{rng.choice(_PREFIXES)}{body}{rng.choice(_SUFFIXES)}"


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def write_large_taskset(root: Path, n_requests: int, *, seed: int = 0, batch_size: int = 500,
                        arms: int = 4, seeds: tuple[int, ...] = (1, 2, 3), selector: str = "lexical",
                        model: str = "bm25-okapi") -> Path:
    """A frozen task set ``root`` (named after the folder) with ``n_requests`` requests and an experiment.

    Returns the experiment path (``root/experiments/ladder.yaml``): ``arms`` rungs of the support ladder
    (base-18 ... giftcards-30), every seed in ``seeds``, ``batch_size`` requests per selection task.
    """
    root = Path(root)
    for folder in ("catalogues", "prompts", "weights"):
        shutil.copytree(SUPPORT / folder, root / folder, dirs_exist_ok=True)
    sources = [json.loads(line) for line in (SUPPORT / "v1.jsonl").read_text().splitlines() if line.strip()]
    adjudications = {}
    adjudication_file = SUPPORT / "v1.adjudications.jsonl"
    if adjudication_file.is_file():
        for line in adjudication_file.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                adjudications[record["request_id"]] = record
    slices = json.loads((SUPPORT / "v1.manifest.json").read_text())["slices"]

    rng = random.Random(seed)
    order = list(range(len(sources)))
    rng.shuffle(order)  # a quick run (--requests 500) still sees every slice and label
    seen: set[str] = set()
    requests, adjudicated = [], []
    for k in range(n_requests):
        source = sources[order[k % len(order)]]
        messages = [dict(m) for m in source["messages"]]
        last = max(i for i, m in enumerate(messages) if m["role"] == "user")
        original = messages[last]["content"]
        text = original if k < len(sources) else _perturb(original, rng)
        attempts = 0
        while _normalise(text) in seen:
            attempts += 1
            text = _perturb(original, rng) if attempts < 20 else f"{_perturb(original, rng)} (ref {k:06d})"
        seen.add(_normalise(text))
        messages[last]["content"] = text
        request = {**source, "id": f"{source['id']}.{k:06d}", "messages": messages}
        requests.append(request)
        if source["id"] in adjudications:
            adjudicated.append({**adjudications[source["id"]], "request_id": request["id"]})

    (root / "v1.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests))
    if adjudicated:
        (root / "v1.adjudications.jsonl").write_text(
            "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in adjudicated))
    freeze_version(root, "v1", slices, notes=f"synthetic: {n_requests} perturbed copies of support v1")

    spec = {
        "name": "synthetic-ladder",
        "description": "speed benchmark: the support ladder over a large synthetic task set",
        "taskset": "..",
        "version": "v1",
        "seeds": list(seeds),
        "batch_size": batch_size,
        "weights": WEIGHTS_WINDOW,
        "defaults": {"prompt": "default", "selector": selector, "model": model},
        "arms": [{"name": name, "catalogue": catalogue} for name, catalogue in LADDER[:arms]],
    }
    (root / "experiments").mkdir(exist_ok=True)
    experiment = root / "experiments" / "ladder.yaml"
    experiment.write_text(yaml.safe_dump(spec, sort_keys=False))
    return experiment


# --------------------------------------------------------------------------------------------------
# Selection rows
# --------------------------------------------------------------------------------------------------


def ladder_tools() -> tuple[list[str], list[int]]:
    """The 30 support tools in ladder order, and how many of them each rung offers (18, 22, 26, 30)."""
    names: list[str] = []
    widths: list[int] = []
    for _, catalogue in LADDER:
        data = json.loads((SUPPORT / "catalogues" / f"{catalogue}.json").read_text())
        names += [tool["name"] for tool in data["tools"]]
        widths.append(len(names))
    return names, widths


def _neighbours(names: list[str], widths: list[int], rng: np.random.Generator) -> np.ndarray:
    """(arm, expected, 3): the tools an expected label is confused with, most often first, offered only.

    Closeness = shared name words (refund_order ~ check_refund_status ~ cancel_order), ties broken at
    random once, so each tool has a few fixed confusable neighbours, as in real failure tables.
    """
    words = [set(name.split("_")) for name in names]
    n_labels = len(names) + 1  # + none
    table = np.zeros((len(widths), n_labels, 3), dtype=np.int64)
    noise = rng.random((n_labels, len(names)))
    generic = [names.index(t) for t in ("search_kb", "create_ticket", "escalate_to_human")]
    for arm, width in enumerate(widths):
        for label in range(n_labels):
            if label == len(names):  # 'none' expected: the generic tools attract the picks
                table[arm, label] = generic
                continue
            candidates = [t for t in range(width) if t != label]
            candidates.sort(key=lambda t: (-len(words[label] & words[t]), noise[label, t]))
            table[arm, label] = candidates[:3]
    return table


def _strings(values: list[str], indices: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
    """``values[indices]`` as an Arrow string array (null where ``mask`` is true), without Python loops."""
    taken = pc.take(pa.array(values, pa.string()), pa.array(indices, pa.int64()))
    if mask is not None:
        taken = pc.if_else(pa.array(mask), pa.scalar(None, pa.string()), taken)
    return taken


def run_ids(n_runs: int) -> list[str]:
    start = datetime(2026, 6, 1, tzinfo=timezone.utc)
    return [f"{start + timedelta(hours=6 * i):%Y%m%dT%H%M%SZ}-{i:06x}" for i in range(n_runs)]


def selection_row_batches(n_rows: int, n_runs: int, *, seed: int = 0,
                          max_rows_per_batch: int = 1_000_000) -> Iterator[pa.Table]:
    """About ``n_rows`` rows (runs x 4 arms x 3 seeds x requests), as SelectionRow-shaped Arrow tables.

    Rows are ordered as the pipeline lands them (run, arm, seed, request). Each table holds whole runs
    and at most ``max_rows_per_batch`` rows (at least one run).
    """
    rng = np.random.default_rng(seed)
    schema = arrow_schema(SelectionRow)
    names, widths = ladder_tools()
    n_arms, n_seeds = len(LADDER), 3
    n_tools = len(names)
    none_index, invalid_index = n_tools, n_tools + 1
    label_names = names + [NONE_LABEL, "lookup_orders"]  # 'lookup_orders': a hallucinated tool (invalid rows)
    new_tools = set(range(widths[0], n_tools))

    counts = json.loads((SUPPORT / "v1.manifest.json").read_text())["counts_by_label"]
    label_share = np.array([counts.get(name, 1) for name in names] + [counts.get(NONE_LABEL, 1)], dtype=float)
    label_share /= label_share.sum()
    # accuracy per (arm, expected label): ~0.8 on average, some tools much worse, later rungs a bit worse
    tool_accuracy = np.clip(rng.beta(9, 2, size=n_tools + 1), 0.35, 0.99)
    accuracy = np.clip(tool_accuracy[None, :] - 0.015 * np.arange(n_arms)[:, None]
                       + rng.normal(0, 0.02, size=(n_arms, n_tools + 1)), 0.05, 0.995)
    neighbours = _neighbours(names, widths, rng)
    catalogues = [catalogue for _, catalogue in LADDER]
    arm_names = [arm for arm, _ in LADDER]
    set_ids = [tool_set_id(names[:width]) for width in widths]
    intents = [f"{label}.{variant}" for label in names + [NONE_LABEL] for variant in ("a", "b", "c", "d")]
    outcomes = ["correct", "wrong_tool", "no_tool", "invalid", "error", "empty"]
    details = ["", "", "", "'lookup_orders' is not an offered tool", "provider error after 2 retries: HTTP 503",
               "empty reply (finish_reason=length)"]

    rows_per_run = max(n_rows // n_runs, n_arms * n_seeds)
    n_requests = rows_per_run // (n_arms * n_seeds)
    runs = run_ids(n_runs)
    runs_per_batch = max(1, max_rows_per_batch // (n_requests * n_arms * n_seeds))
    for first in range(0, n_runs, runs_per_batch):
        batch_runs = list(range(first, min(first + runs_per_batch, n_runs)))
        per_run = n_arms * n_seeds * n_requests
        n = per_run * len(batch_runs)
        run_idx = np.repeat(np.asarray(batch_runs), per_run)
        arm = np.tile(np.repeat(np.arange(n_arms), n_seeds * n_requests), len(batch_runs))
        seed_no = np.tile(np.repeat(np.arange(n_seeds), n_requests), n_arms * len(batch_runs))
        request = np.tile(np.arange(n_requests), n_arms * n_seeds * len(batch_runs))
        # per (run, request): its label, slice and intent
        labels = rng.choice(n_tools + 1, size=(len(batch_runs), n_requests), p=label_share)
        intent_variant = rng.integers(0, 4, size=(len(batch_runs), n_requests))
        request_key = (run_idx - first) * n_requests + request
        label = labels.reshape(-1)[request_key]
        width = np.asarray(widths)[arm]
        expected = np.where((label == none_index) | (label < width), label, none_index)
        is_new = np.isin(label, list(new_tools))

        u = rng.random(n)
        correct = u < accuracy[arm, expected] + rng.normal(0, 0.01, size=(n_arms, n_seeds))[arm, seed_no]
        kind = rng.random(n)
        # among wrong rows: 3% failures (invalid / error / empty), 12% no tool, the rest a neighbour
        failure = ~correct & (kind < 0.03)
        no_tool = ~correct & ~failure & (kind < 0.15) & (expected != none_index)
        wrong_tool = ~correct & ~failure & ~no_tool
        pick = np.searchsorted([0.6, 0.9], rng.random(n), side="right")
        chosen = np.where(correct, expected, np.where(no_tool, none_index, neighbours[arm, expected, pick]))
        failure_kind = rng.integers(3, 6, size=n)  # 3 invalid, 4 error, 5 empty
        outcome = np.select([correct, wrong_tool, no_tool], [0, 1, 2], default=failure_kind)
        chosen = np.where(outcome == 3, invalid_index, chosen)
        chosen_null = (outcome == 4) | (outcome == 5)

        confidence = np.where(correct, rng.beta(8, 2, size=n), rng.beta(3, 3, size=n))
        positions = np.stack([np.stack([rng.permutation(n_tools) + 1 for _ in range(n_seeds)])
                              for _ in range(n_arms)])  # (arm, seed, tool) -> 1-based position
        position = positions[arm, seed_no, np.minimum(expected, n_tools - 1)]
        input_tokens = (650 + 28 * width + rng.integers(0, 120, size=n)).astype(np.int64)
        output_tokens = rng.integers(12, 48, size=n).astype(np.int64)
        cost = input_tokens * 0.4e-6 + output_tokens * 1.6e-6
        latency = rng.lognormal(np.log(550), 0.35, size=n)
        cache_hit = rng.random(n) < 0.3
        retries = (rng.random(n) < 0.02).astype(np.int64)
        failed = outcome >= 3

        request_ids = [f"syn-r{r:05d}-{i:06d}" for r in batch_runs for i in range(n_requests)]
        pair = pc.binary_join_element_wise(_strings(label_names, expected), _strings(label_names, chosen),
                                           " -> ")
        pair = pc.if_else(pa.array((outcome == 1) | (outcome == 2)), pair, pa.scalar(None, pa.string()))
        columns = {
            "run_id": _strings(runs, run_idx),
            "experiment": _strings(["support-ladder"], np.zeros(n, dtype=np.int64)),
            "arm": _strings(arm_names, arm),
            "rung": pa.array(arm + 1, pa.int64()),
            "seed": pa.array(seed_no + 1, pa.int64()),
            "taskset": _strings(["support"], np.zeros(n, dtype=np.int64)),
            "taskset_version": _strings(["v1"], np.zeros(n, dtype=np.int64)),
            "request_id": _strings(request_ids, request_key),
            "slice": _strings(["existing", "new_tools"], is_new.astype(np.int64)),
            "intent": _strings(intents, label * 4 + intent_variant.reshape(-1)[request_key]),
            "label_status": _strings(["adjudicated", "provisional"], (rng.random(n) < 0.03).astype(np.int64)),
            "catalogue": _strings(catalogues, arm),
            "tool_set_id": _strings(set_ids, arm),
            "n_tools": pa.array(width, pa.int64()),
            "expected": _strings(label_names, expected),
            "expected_position": pa.array(position, pa.int64(), mask=expected == none_index),
            "chosen": _strings(label_names, chosen, chosen_null),
            "correct": pa.array(correct),
            "outcome": _strings(outcomes, outcome),
            "pair": pair,
            "invalid": pa.array(outcome == 3),
            "error": pa.array(outcome == 4),
            "empty": pa.array(outcome == 5),
            "confidence": pa.array(confidence, pa.float64(), mask=chosen_null),
            "probabilities": pa.nulls(n, schema.field("probabilities").type),
            "detail": _strings(details, outcome, ~failed),
            "input_tokens": pa.array(input_tokens, pa.int64(), mask=outcome == 4),
            "output_tokens": pa.array(output_tokens, pa.int64(), mask=outcome == 4),
            "cost_usd": pa.array(cost, pa.float64(), mask=outcome == 4),
            "latency_ms": pa.array(latency, pa.float64()),
            "model_id": _strings(["gpt-4.1-mini-2025-04-14"], np.zeros(n, dtype=np.int64)),
            "served_model_id": _strings(["gpt-4.1-mini-2025-04-14"], np.zeros(n, dtype=np.int64), outcome == 4),
            "selector": _strings(["openai"], np.zeros(n, dtype=np.int64)),
            "prompt": _strings(["default"], np.zeros(n, dtype=np.int64)),
            "cache_hit": pa.array(cache_hit),
            "retries": pa.array(retries, pa.int64()),
        }
        # columns added to SelectionRow since this was written are optional: null here
        yield pa.table([columns.get(field.name, pa.nulls(n, field.type)) for field in schema], schema=schema)


def warehouse_records(n_runs: int) -> dict[str, list]:
    """The registry records the synthetic rows join to: runs (with a weights window), the ladder's
    comparisons (each rung against the one before; the last one recorded as a task-set version change so
    that version_calibration has rows), weights, tool sets."""
    names, widths = ladder_tools()
    weights = json.loads((SUPPORT / "weights" / f"{WEIGHTS_WINDOW}.json").read_text())["weights"]
    started = datetime(2026, 6, 1, tzinfo=timezone.utc)
    runs = [SelectionRunRecord(run_id=run_id, experiment="support-ladder", experiment_path="synthetic.yaml",
                      experiment_hash="0" * 64, taskset="support", started_at=started, finished_at=started,
                      n_rows=0, criteria_hash=None, criteria_registered_at=None, weights_window=WEIGHTS_WINDOW,
                      tooleval_version="bench") for run_id in run_ids(n_runs)]
    return {
        "runs": runs,
        # the last rung's comparison is recorded as a version change, so version_calibration has work to do
        "comparisons": [ComparisonRecord(run_id=run.run_id, baseline=LADDER[i][0], arm=LADDER[i + 1][0],
                                         changed=["version"] if i == len(LADDER) - 2 else ["catalogue"])
                        for run in runs for i in range(len(LADDER) - 1)],
        "production_weights": [WeightRecord(taskset="support", window_id=WEIGHTS_WINDOW, tool=tool, weight=share)
                               for tool, share in weights.items()],
        "offered_tools": [OfferedTool(tool_set_id=tool_set_id(names[:width]), tool=name)
                          for width in widths for name in names[:width]],
    }
