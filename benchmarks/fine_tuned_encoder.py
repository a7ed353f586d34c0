"""How far a MiniLM fine-tuned on a set's own requests takes the decision model, held out (against the BFCL goal of 95%).

    PYTHONPATH=. .venv/bin/python benchmarks/fine_tuned_encoder.py TASKSET_VERSION_PATH [--workdir DIR]
        [--epochs 2] [--lr 3e-5] [--only-folds 0,1,...] [--reuse] [--decision-model MODEL_FILE]

For each of the 5 folds ``tooleval train`` uses (sha256 of the request text, its default salt):

1. fine-tune all-MiniLM-L6-v2 on the other folds' requests: per request, the cross-entropy of a softmax
   over the cosines (x 20) of the request to each of its offered tools' texts (the embedding router's own
   text of a tool), the right tool the target; on a set with 'none' labels one more option, a learned
   threshold tau (x 20, the same for every request; lr 1e-2), the target of a 'none' request. AdamW,
   batches of 16 requests, ``--epochs``; saved to ``WORKDIR/encoder-K`` (tau to ``WORKDIR/tau-K.json``);
2. score the fold's requests by plain cosine under that encoder (the fine-tuned embedding router; on a set
   with 'none' labels it picks 'none' when no tool's cosine reaches tau);
3. ``tooleval train --encoder WORKDIR/encoder-K`` on the whole version, then score the fold's requests with
   the model file as a run does: they are the examples of fold K, so its fold model K scores them, whose
   logit, kNN examples and probe never saw fold K, and neither did the encoder;
4. with ``--decision-model MODEL_FILE`` (``tooleval train`` on the same version with its 5 default folds, on
   any encoder): the product of two experts, fixed before it was first measured and fitted on nothing: per
   request, the option (offered tools, and 'none') with the highest 0.5 log p + 0.5 log q, where p is that
   model's probabilities (its fold model K: it never saw the fold) and q the fine-tuned cosine's softmax
   (x 20, the fine-tuning's own scale; with tau as 'none' on a set with 'none' labels, else no 'none').

So every figure is held out twice over: nothing that scores a request learned from it. (The other folds'
rows in step 3 are scored by an encoder that learned from them; their figures are not used.) Prints per fold
and in all: the base MiniLM cosine, the fine-tuned cosine and the decision model on the fine-tuned encoder
(its learned 'none'), the product of experts (with ``--decision-model``), per slice on a set with slices,
with the training time. Not a test: on 2 CPU cores one fold of BFCL live_multiple (842 requests, 2 epochs)
fine-tunes in 8-12 minutes, of the pooled live set (1,546) in about 20.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

FOLDS = 5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version_path", type=Path)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/tooleval-fine-tuned"))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--only-folds", default=None, help="e.g. 0,1 (default: all five)")
    parser.add_argument("--reuse", action="store_true", help="use WORKDIR/encoder-K where it exists")
    parser.add_argument("--decision-model", type=Path, default=None,
                        help="a model file `tooleval train` wrote for this version: also print the product of "
                             "its fold models and the fine-tuned cosine")
    args = parser.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import torch

    from schemas.catalogue import NONE_LABEL
    from tasks.selectors.offline import NEVER_ABSTAIN, offline_selector
    from tasks.selectors.decision_models.decision_features import text_hash
    from tasks.selectors.routers.embedding import DEFAULT_MODEL_ID, load_model
    from tasks.selectors.routers.embedding_store import is_model_folder
    from experimental.fine_tuning.fine_tune import SCALE, TuningExample, encode, fine_tune
    from tasks.selectors.decision_models.labelled_inputs import labelled_inputs
    from tasks.selectors.routers.router_scores import abstain_softmax
    from tasks.selectors.decision_models.train_decision_model import DEFAULT_SALT, fold_of, train_decision_model
    from tasks.selectors.decision_models.trained import TrainedSelector
    from tasks.taskset.load_taskset import load_version

    torch.set_num_threads(2)
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    version_path = args.version_path.resolve()
    table = load_version(version_path.parent, version_path.stem).table
    router = offline_selector("embedding", DEFAULT_MODEL_ID, NEVER_ABSTAIN)
    if any(own is None for own in table["tools"].to_list()):
        raise SystemExit(f"{version_path}: every request must carry its own tools (a per-request catalogue)")
    inputs, labels = labelled_inputs(table)
    folds = [fold_of(text_hash(item.text), FOLDS, DEFAULT_SALT) for item in inputs]
    slices = table["slice"].to_list() if "slice" in table.columns else [None] * len(inputs)
    with_none = NONE_LABEL in labels
    learnable = [i for i, item in enumerate(inputs) if item.tools]  # a request offered nothing is 'none' anyway
    base = load_model(DEFAULT_MODEL_ID)

    def example(i: int) -> tuple[str, list[str], int]:
        """Request text, its tools' texts, and the target: the label's position, len(tools) for 'none'."""
        item = inputs[i]
        names = [t.name for t in item.tools]
        return item.text, [router.document(t) for t in item.tools], \
            names.index(labels[i]) if labels[i] in names else len(names)

    def cosines(model, rows: list[int]) -> dict[int, np.ndarray]:
        """Each row's cosine to each of its offered tools' texts under ``model`` (empty when none is offered),
        encoded once and read by every pick below."""
        model.eval()
        out = {}
        with torch.inference_mode():
            for i in rows:
                query, documents, _ = example(i)
                if not documents:
                    out[i] = np.zeros(0)
                    continue
                vectors = encode(model, [query] + documents)
                out[i] = (vectors[1:] @ vectors[0]).double().numpy()
        return out

    def cosine_picks(cos: dict[int, np.ndarray], tau: float | None) -> dict[int, str]:
        """Each row's pick by plain cosine: its most similar tool; 'none' below ``tau`` (or with no tool)."""
        picks = {}
        for i, row in cos.items():
            if not len(row):
                picks[i] = NONE_LABEL
                continue
            best = int(np.argmax(row))
            below = tau is not None and float(row[best]) < tau
            picks[i] = NONE_LABEL if below else inputs[i].tools[best].name
        return picks

    def product_picks(cos: dict[int, np.ndarray], tau: float | None) -> dict[int, str]:
        """Each row's pick by 0.5 log p(decision model) + 0.5 log q(fine-tuned cosine), over tools + 'none':
        q is the embedding router's softmax (``abstain_softmax``) at the fine-tuning's scale, tau as 'none'."""
        picks = {}
        for (i, row), result in zip(cos.items(), expert._score([inputs[i] for i in cos])):
            if result is None or not len(row):
                picks[i] = NONE_LABEL
                continue
            q, _ = abstain_softmax(row[None], -np.inf if tau is None else tau, 1 / SCALE)
            with np.errstate(divide="ignore"):  # no tau: 'none' has q = 0, log q = -inf
                log_q = np.log(q[0])
            log_p = np.log(np.maximum(result[0], 1e-300))
            offered = [t.name for t in inputs[i].tools] + [NONE_LABEL]
            picks[i] = offered[int(np.argmax(0.5 * log_p + 0.5 * log_q))]
        return picks

    def fine_tuned(k: int, train_rows: list[int]):
        tuning = [TuningExample(query, tuple(documents), target)
                  for query, documents, target in map(example, train_rows)]
        return fine_tune(base, tuning, epochs=args.epochs, lr=args.lr, seed=k, learn_none=with_none)

    only = range(FOLDS) if args.only_folds is None else [int(k) for k in args.only_folds.split(",")]
    names = sorted({sl for sl in slices if sl is not None}) or [None]
    kinds = ("base", "tuned", "tuned_tau", "model") + (("product",) if args.decision_model else ())
    expert = None
    if args.decision_model is not None:
        if not args.decision_model.is_file():
            raise SystemExit(f"{args.decision_model}: no such model file (--decision-model: a file `tooleval train` "
                             f"wrote for {version_path})")
        expert = TrainedSelector(options={"model_file": str(args.decision_model.resolve())})
        outside = [inputs[i].request_id for i in range(len(inputs))
                   if expert._which(inputs[i], text_hash(inputs[i].text)) != folds[i]]
        if outside:
            raise SystemExit(f"{args.decision_model}: not cross-fitted on this version's {FOLDS} folds "
                             f"(default salt): {len(outside)} request(s) are not examples of the fold the "
                             f"benchmark holds them out in, e.g. {outside[0]}; train it with `tooleval train "
                             f"{version_path}`")
    right = {(kind, name): 0 for kind in kinds for name in names}
    seen = {(answerable, name): 0 for answerable in (False, True) for name in names}

    def shown(kind: str, per: dict, counts: dict, *, totals: bool = False) -> str:
        """Accuracy per slice; the plain argmax (base, tuned) never abstains: on the answerable requests only.
        ``totals`` adds the counts (a goal such as 95% can hang on one request)."""
        only_answerable = kind in ("base", "tuned")
        n = {name: counts[(True, name)] + (0 if only_answerable else counts[(False, name)]) for name in names}
        return " / ".join(f"{'' if name is None else name + ' '}{100 * per[(kind, name)] / n[name]:.1f}%"
                          + (f" ({per[(kind, name)]:,} of {n[name]:,})" if totals else "")
                          for name in names if n[name])

    print(f"{version_path}: {len(inputs)} requests ({sum(label != NONE_LABEL for label in labels)} answerable), "
          f"{FOLDS} folds, {args.epochs} epochs, lr {args.lr:g}" + (", 'none' learned as tau" if with_none else ""))
    for k in only:
        started = time.perf_counter()
        train_rows = [i for i in learnable if folds[i] != k]
        held = [i for i in range(len(inputs)) if folds[i] == k]
        encoder_dir, tau_file = workdir / f"encoder-{k}", workdir / f"tau-{k}.json"
        if args.reuse and is_model_folder(encoder_dir) and (tau_file.is_file() or not with_none):
            model = load_model(str(encoder_dir))
            tau = json.loads(tau_file.read_text()) if with_none else None
            print(f"fold {k}: reusing {encoder_dir}")
        else:
            model, tau = fine_tuned(k, train_rows)
            model.save(str(encoder_dir))
            if with_none:
                tau_file.write_text(json.dumps(tau))
        tune_s = time.perf_counter() - started
        tuned_cos = cosines(model, held)
        picks = {"base": cosine_picks(cosines(base, held), None), "tuned": cosine_picks(tuned_cos, None),
                 "tuned_tau": cosine_picks(tuned_cos, tau)}
        if expert is not None:
            picks["product"] = product_picks(tuned_cos, tau)
        model_file = workdir / f"model-{k}.json"
        train_decision_model(version_path, model_file, encoder=str(encoder_dir))
        selector = TrainedSelector(options={"model_file": str(model_file)})
        picks["model"] = {}
        for i, result in zip(held, selector._score([inputs[i] for i in held])):
            offered = [t.name for t in inputs[i].tools] + [NONE_LABEL]
            picks["model"][i] = NONE_LABEL if result is None else offered[int(np.argmax(result[0]))]
        fold_right = {(kind, name): 0 for kind in kinds for name in names}
        fold_seen = dict.fromkeys(seen, 0)
        for i in held:
            name = slices[i] if slices[i] in names else None
            fold_seen[(labels[i] != NONE_LABEL, name)] += 1
            for kind in kinds:
                fold_right[(kind, name)] += picks[kind][i] == labels[i]
        for key, value in fold_right.items():
            right[key] += value
        for key, value in fold_seen.items():
            seen[key] += value
        print(f"fold {k}: {len(held)} held out; cosine MiniLM {shown('base', fold_right, fold_seen)}, fine-tuned "
              f"{shown('tuned', fold_right, fold_seen)} (argmax, never 'none')"
              + (f", with its tau {tau:.3f} {shown('tuned_tau', fold_right, fold_seen)}" if with_none else "")
              + f"; decision model on the fine-tuned encoder {shown('model', fold_right, fold_seen)}"
              + (f"; product {shown('product', fold_right, fold_seen)}" if expert is not None else "") + "; "
              f"fine-tuning {tune_s:.0f} s, in all {time.perf_counter() - started:.0f} s", flush=True)

    def total(kind: str) -> str:
        return shown(kind, right, seen, totals=True)

    print(f"all held out ({sum(seen.values())} requests): cosine MiniLM {total('base')}, fine-tuned {total('tuned')}"
          + (f", with its tau {total('tuned_tau')}" if with_none else "")
          + f"; decision model on the fine-tuned encoders {total('model')}"
          + (f"; product of {args.decision_model.name} and the fine-tuned cosine {total('product')}"
             if expert is not None else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
