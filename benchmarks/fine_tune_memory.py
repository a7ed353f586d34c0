"""Peak memory and time of fine-tuning one encoder (``experimental/fine_tuning/fine_tune.py``, what ``tooleval train
--fine-tune`` does once per fold model), with gradient checkpointing above each budget of padded tokens.

    PYTHONPATH=. .venv/bin/python benchmarks/fine_tune_memory.py TASKSET_VERSION_PATH [--limit N] \
        [--epochs 2] [--budgets 8192,inf,0]

Each budget runs in a fresh interpreter (peak RSS is per process): the version's labelled requests with tools
(the first ``--limit``; 'none' labels learned with the threshold, as train does) fine-tuned from MiniLM with
seed 0. ``inf`` checkpoints no batch (before 2026-12-04), ``0`` every batch. Prints per budget the wall and CPU
seconds, the peak RSS, the batches checkpointed and a fingerprint of the weights (the same for every budget:
checkpointing changes no weight). Not a test.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def one(version_path: Path, limit: int | None, epochs: int, budget: float) -> dict:
    """Fine-tune in this process with ``budget``; the figures as a dict."""
    from transformers import PreTrainedModel

    from schemas.catalogue import NONE_LABEL
    from experimental.fine_tuning import fine_tune as ft
    from tasks.selectors.routers.embedding import DEFAULT_MODEL_ID, load_model
    from tasks.selectors.decision_models.labelled_inputs import catalogue_union, labelled_inputs
    from experimental.fine_tuning.product_experts import tuning_examples
    from tasks.taskset.load_taskset import load_version

    version = load_version(version_path.parent, version_path.stem)
    inputs, labels = labelled_inputs(version.table, catalogue_union(version_path.parent))
    targets = [len(item.tools) if label == NONE_LABEL else [t.name for t in item.tools].index(label)
               for item, label in zip(inputs, labels)]
    examples = tuning_examples(DEFAULT_MODEL_ID, inputs, targets)[:limit]
    learn_none = any(e.target == len(e.documents) for e in examples)
    base = load_model(DEFAULT_MODEL_ID)
    checkpointed = 0
    enable = PreTrainedModel.activation_checkpointing_enable

    def counting(self, *args, **kwargs):  # encode() turns checkpointing on once per checkpointed batch
        nonlocal checkpointed
        checkpointed += 1
        return enable(self, *args, **kwargs)

    PreTrainedModel.activation_checkpointing_enable = counting
    wall, cpu = time.perf_counter(), time.process_time()
    model, _ = ft.fine_tune(base, examples, epochs=epochs, seed=0, learn_none=learn_none, checkpoint_above=budget)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    weights = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in model.parameters())).hexdigest()[:12]
    return {"budget": budget, "examples": len(examples), "batches": -(-len(examples) // ft.BATCH) * epochs,
            "checkpointed": checkpointed, "wall_s": wall, "cpu_s": cpu,
            "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2, "weights": weights}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version_path", type=Path)
    parser.add_argument("--limit", type=int, default=None, help="fine-tune on the first N requests with tools")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--budgets", default="8192,inf", help="padded-token budgets, comma-separated")
    parser.add_argument("--one", type=float, default=None, help=argparse.SUPPRESS)  # a child process's budget
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one(args.version_path, args.limit, args.epochs, args.one)))
        return 0
    print(f"fine-tuning MiniLM on {args.version_path}, {args.epochs} epoch(s), seed 0; a fresh process per budget")
    print(f"{'budget':>8} {'examples':>8} {'checkpointed':>14} {'wall s':>7} {'CPU s':>7} {'peak GB':>8}  weights")
    for budget in args.budgets.split(","):
        command = [sys.executable, __file__, str(args.version_path), "--epochs", str(args.epochs), "--one", budget]
        if args.limit is not None:
            command += ["--limit", str(args.limit)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{budget:>8} {r['examples']:>8} {r['checkpointed']:>6} of {r['batches']:<5} {r['wall_s']:>7.0f} "
              f"{r['cpu_s']:>7.0f} {r['peak_gb']:>8.2f}  {r['weights']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
