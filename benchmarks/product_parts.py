"""The parts of a `tooleval train --fine-tune` model on its own version, held out: the logit alone, the
fine-tuned cosine alone, and their product (what a run scores with), with the requests each wins from the other.

    PYTHONPATH=. .venv/bin/python benchmarks/product_parts.py MODEL_FILE TASKSET_VERSION_PATH

Every request of the version the model learned from is scored by the fold model that never saw it and by that
fold model's own encoder, which never saw it either (the logit: the file without its experts; the cosine: the
argmax of the fold encoder's cosines, 'none' when no tool reaches tau on a set with 'none' labels). Reads the
model file and the version; encodes with the embedding cache. Not a test.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_file", type=Path)
    parser.add_argument("version_path", type=Path)
    parser.add_argument("--catalogue", action="append", default=None, metavar="NAME",
                        help="the shared tools of requests without their own, as `tooleval train --catalogue` took "
                        "them (default: every catalogue of the task set, as train's default)")
    args = parser.parse_args(argv)

    from schemas.catalogue import NONE_LABEL
    from schemas.decision_model import DecisionModelFile
    from tasks.selectors.decision_features import text_hash
    from tasks.selectors.labelled_inputs import catalogue_union, labelled_inputs
    from tasks.selectors.product_experts import expert_cosines, logit_only
    from tasks.selectors.trained import TrainedSelector
    from tasks.taskset.load_taskset import load_version

    model_file = args.model_file.resolve()
    model = DecisionModelFile.model_validate_json(model_file.read_bytes())
    if model.full_model.expert is None or not model.fold_models:
        raise SystemExit(f"{model_file}: not a cross-fitted model trained with --fine-tune")
    version = args.version_path.resolve()
    table = load_version(version.parent, version.stem).table
    inputs, labels = labelled_inputs(table, catalogue_union(version.parent, args.catalogue))
    folds = dict(zip(model.example_text_hashes, model.example_folds))
    unknown = [item.request_id for item in inputs if text_hash(item.text) not in folds]
    if unknown:
        raise SystemExit(f"{model_file} did not learn from {args.version_path} ({len(unknown)} requests it never "
                         f"saw, e.g. {unknown[0]})")

    picks: dict[str, list[str | None]] = {}
    picks["product"] = [s.chosen for s in TrainedSelector(options={"model_file": str(model_file)}).select(inputs)]
    with tempfile.TemporaryDirectory() as folder:
        plain = Path(folder) / "logit.json"
        plain.write_text(logit_only(model).model_dump_json())
        picks["logit"] = [s.chosen for s in TrainedSelector(options={"model_file": str(plain)}).select(inputs)]
    picks["cosine"] = []
    for item in inputs:
        expert = model.fold_models[folds[text_hash(item.text)]].expert
        cos = expert_cosines([item], str(model_file.parent / expert.encoder))[0]
        best = int(np.argmax(cos)) if len(cos) else None
        below = best is None or (expert.tau is not None and cos[best] < expert.tau)
        picks["cosine"].append(NONE_LABEL if below else item.tools[best].name)
    right = {kind: np.array([p == label for p, label in zip(chosen, labels)]) for kind, chosen in picks.items()}
    n = len(labels)
    print(f"{model_file.name} on {args.version_path} ({n:,} requests, each held out from its fold's logit and "
          "encoder):")
    for kind in ("logit", "cosine", "product"):
        print(f"  {kind:8} {int(right[kind].sum()):,} right, {100 * right[kind].mean():.2f}%")
    for other in ("logit", "cosine"):
        wins = int((right["product"] & ~right[other]).sum())
        losses = int((~right["product"] & right[other]).sum())
        print(f"  product against the {other} alone: wins {wins}, loses {losses}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
