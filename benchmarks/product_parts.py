"""The parts of a `tooleval train --fine-tune` model on its own version, held out: the logit alone, the
fine-tuned cosine alone, and their product (what a run scores with), with the requests each wins from the other.

    PYTHONPATH=. .venv/bin/python benchmarks/product_parts.py MODEL_FILE TASKSET_VERSION_PATH

Every request of the version the model learned from is scored by the fold model that never saw it and by that
fold model's own encoder, which never saw it either (the logit: the file without its experts; the cosine: the
argmax of the fold encoder's cosines, 'none' when no tool reaches tau on a set with 'none' labels). Last, the
product with its two weights fitted (a log p + b log q, per fold model by maximum likelihood on the other folds'
held-out products, as the product's temperature is fitted) where the shipped product weighs the two alike.
With ``--draw OTHER_MODEL_FILE`` (repeatable: the same training with another ``--fine-tune-seed``, so the
same requests, folds and logit), each draw's product alone, and the product whose log q is the mean of every
draw's (the model file's and the others': an ensemble of the fine-tuning draws; a rule fixed before it was
first measured, nothing fitted). Reads the model files and the version; encodes with the embedding cache.
Not a test.
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
    parser.add_argument("--draw", action="append", type=Path, default=[], metavar="OTHER_MODEL_FILE",
                        help="another draw of the same training (`tooleval train --fine-tune-seed`): each draw's "
                        "product and the product of the mean log q over the draws")
    args = parser.parse_args(argv)

    from schemas.catalogue import NONE_LABEL
    from schemas.decision_model import DecisionModelFile
    from tasks.selectors.decision_models.decision_features import text_hash
    from tasks.selectors.decision_models.labelled_inputs import catalogue_union, labelled_inputs
    from experimental.fine_tuning.product_experts import expert_cosines, logit_only, product_utilities
    from tasks.selectors.decision_models.trained import TrainedSelector
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

    draws = [DecisionModelFile.model_validate_json(path.resolve().read_bytes()) for path in args.draw]
    for path, draw in zip(args.draw, draws):
        if (draw.example_text_hashes, draw.example_folds) != (model.example_text_hashes, model.example_folds) \
                or draw.full_model.expert is None:
            raise SystemExit(f"{path}: not another draw of {model_file.name} (other requests or folds, or no "
                             "fine-tuned encoders)")
    picks: dict[str, list[str | None]] = {}
    picks["product"] = [s.chosen for s in TrainedSelector(options={"model_file": str(model_file)}).select(inputs)]
    with tempfile.TemporaryDirectory() as folder:
        plain = Path(folder) / "logit.json"
        plain.write_text(logit_only(model).model_dump_json())
        logit = TrainedSelector(options={"model_file": str(plain)}).select(inputs)
    picks["logit"] = [s.chosen for s in logit]
    picks["cosine"] = []
    parts = []  # per request: its fold, log p and log q over its tools and 'none', the label's position
    for item, selection, label in zip(inputs, logit, labels):
        fold = folds[text_hash(item.text)]
        expert = model.fold_models[fold].expert
        cos = expert_cosines([item], str(model_file.parent / expert.encoder))[0]
        names = [t.name for t in item.tools] + [NONE_LABEL]
        if item.tools and label in names:
            p = np.array([[selection.probabilities[name] for name in names]])
            log_p, log_q = (product_utilities(p, [cos], expert.tau, expert.scale, w)[0] for w in (1.0, 0.0))
            others = [product_utilities(p, expert_cosines([item], str(path.resolve().parent / e.encoder)),
                                        e.tau, e.scale, 0.0)[0]
                      for path, e in ((path, d.fold_models[fold].expert) for path, d in zip(args.draw, draws))]
            parts.append((fold, log_p, log_q, names.index(label), others))
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
    if draws:
        def product_right(log_qs) -> int:
            return sum(int(np.argmax(0.5 * log_p + 0.5 * q) == y) for (_, log_p, _, y, _), q in zip(parts, log_qs))

        for d, path in enumerate(args.draw):
            draw_seed = draws[d].full_model.expert.seed
            print(f"  the product with {path.name}'s encoders (draw {draw_seed}): "
                  f"{product_right([others[d] for *_, others in parts]):,} right of {len(parts):,} scored")
        mean_q = [np.mean(np.stack([log_q, *others]), axis=0) for _, _, log_q, _, others in parts]
        print(f"  the product with the mean log q of the {len(draws) + 1} draws: {product_right(mean_q):,} right "
              f"of {len(parts):,} scored (this file's draw alone: "
              f"{product_right([log_q for _, _, log_q, _, _ in parts]):,})")
    fitted = fitted_weights([row[:4] for row in parts])
    print("  a log p + b log q fitted per fold model on the other folds' held-out products (maximum likelihood;")
    print(f"  the product ships a = b): {fitted['right']:,} right of {len(parts):,} scored, logit's share "
          f"{', '.join(f'{w:.2f}' for w in fitted['weights'])}; a = b: {fitted['equal']:,}")
    return 0


def fitted_weights(parts: list[tuple[int, np.ndarray, np.ndarray, int]]) -> dict:
    """For each fold k: (a, b) of ``a log p + b log q`` fitted by maximum likelihood on the held-out products of
    the other folds (as the product's temperature is), then the right picks on fold k's own requests; the
    weights shown are a / (a + b), the logit's share."""
    from scipy.optimize import minimize

    def utilities(ab: np.ndarray, log_p: np.ndarray, log_q: np.ndarray) -> np.ndarray:
        finite = np.isfinite(log_p) & np.isfinite(log_q)
        return np.where(finite, ab[0] * np.where(finite, log_p, 0) + ab[1] * np.where(finite, log_q, 0), -np.inf)

    def nll(ab: np.ndarray, rows: list) -> float:
        total = 0.0
        for _, log_p, log_q, y in rows:
            u = utilities(ab, log_p, log_q)
            top = u.max()
            total -= u[y] - top - np.log(np.exp(u - top).sum())
        return total

    def right(ab: np.ndarray, rows: list) -> int:
        return sum(int(np.argmax(utilities(ab, log_p, log_q)) == y) for _, log_p, log_q, y in rows)

    out = {"right": 0, "weights": [], "equal": right(np.array([0.5, 0.5]), parts)}
    for k in sorted({fold for fold, *_ in parts}):
        mine = [r for r in parts if r[0] == k]
        fit = minimize(nll, x0=np.array([0.5, 0.5]), args=([r for r in parts if r[0] != k],), method="L-BFGS-B",
                       bounds=[(1e-4, None), (1e-4, None)])
        out["right"] += right(fit.x, mine)
        out["weights"].append(float(fit.x[0] / fit.x.sum()))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
