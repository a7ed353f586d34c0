"""How far a MiniLM fine-tuned on a set's own requests takes the decision model, held out (issue 28's BFCL goal).

    PYTHONPATH=. .venv/bin/python benchmarks/fine_tuned_encoder.py TASKSET_VERSION_PATH [--workdir DIR]
        [--epochs 2] [--lr 3e-5] [--only-folds 0,1,...] [--reuse]

For each of the 5 folds ``tooleval train`` uses (sha256 of the request text, its default salt):

1. fine-tune all-MiniLM-L6-v2 on the other folds' answerable requests: per request, the cross-entropy of a
   softmax over the cosines (x 20) of the request to each of its offered tools' texts (the embedding
   router's own text of a tool), the right tool the target; AdamW, batches of 16 requests, ``--epochs``;
   saved to ``WORKDIR/encoder-K``;
2. score the fold's requests by plain cosine under that encoder (the fine-tuned embedding router);
3. ``tooleval train --encoder WORKDIR/encoder-K`` on the whole version, then score the fold's requests with
   the model file as a run does: they are the examples of fold K, so its fold model K scores them, whose
   logit, kNN examples and probe never saw fold K, and neither did the encoder.

So every figure is held out twice over: nothing that scores a request learned from it. (The other folds'
rows in step 3 are scored by an encoder that learned from them; their figures are not used.) Prints per fold
and in all: the base MiniLM cosine, the fine-tuned cosine and the decision model on the fine-tuned encoder,
with the training time. Not a test: on 2 CPU cores one fold of BFCL live_multiple (842 requests, 2 epochs)
fine-tunes in 8-12 minutes.
"""

from __future__ import annotations

import argparse
import copy
import os
import random
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
    args = parser.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import torch

    from schemas.catalogue import NONE_LABEL
    from schemas.taskset import effective_label
    from tasks.selectors.base import SelectionInput
    from tasks.selectors.base_routers import NEVER_ABSTAIN, base_router
    from tasks.selectors.decision_features import text_hash
    from tasks.selectors.embedding import DEFAULT_MODEL_ID, load_model
    from tasks.selectors.embedding_store import is_model_folder
    from tasks.selectors.train_decision_model import DEFAULT_SALT, fold_of, train_decision_model
    from tasks.selectors.trained import TrainedSelector
    from tasks.taskset.load_taskset import load_version
    from tasks.taskset.request_table import parse_messages, parse_tools

    torch.set_num_threads(2)
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    version_path = args.version_path.resolve()
    table = load_version(version_path.parent, version_path.stem).table
    router = base_router("embedding", DEFAULT_MODEL_ID, NEVER_ABSTAIN)
    inputs, labels, folds = [], [], []
    for request_id, messages, expected, fallback, own in zip(
            table["id"].to_list(), table["messages"].to_list(), table["expected"].to_list(),
            table["fallback"].to_list(), table["tools"].to_list()):
        tools = tuple(parse_tools(own) or ())
        item = SelectionInput(request_id=request_id, messages=parse_messages(messages), tools=tools, prompt="")
        inputs.append(item)
        labels.append(effective_label(expected, fallback, {t.name for t in tools}))
        folds.append(fold_of(text_hash(item.text), FOLDS, DEFAULT_SALT))
    folds_arr = np.array(folds)
    if not all(item.tools for item in inputs):
        raise SystemExit(f"{version_path}: every request must carry its own tools (a per-request catalogue)")
    answerable = [i for i, item in enumerate(inputs) if labels[i] != NONE_LABEL]
    base = load_model(DEFAULT_MODEL_ID)

    def encode(model, texts: list[str]):
        features = model.preprocess(texts) if hasattr(model, "preprocess") else model.tokenize(texts)
        return torch.nn.functional.normalize(model(dict(features))["sentence_embedding"], dim=-1)

    def example(i: int) -> tuple[str, list[str], int]:
        item = inputs[i]
        return item.text, [router.document(t) for t in item.tools], [t.name for t in item.tools].index(labels[i])

    def cosine_right(model, rows: list[int]) -> int:
        model.eval()
        right = 0
        with torch.inference_mode():
            for i in rows:
                if labels[i] == NONE_LABEL:
                    continue
                query, documents, target = example(i)
                vectors = encode(model, [query] + documents)
                right += int(torch.argmax(vectors[1:] @ vectors[0]).item() == target)
        return right

    def fine_tuned(k: int, train_rows: list[int]):
        model = copy.deepcopy(base)
        optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr)
        order = random.Random(k)
        torch.manual_seed(k)
        for _ in range(args.epochs):
            model.train()
            order.shuffle(train_rows)
            for start in range(0, len(train_rows), 16):
                texts, spans = [], []
                for i in train_rows[start:start + 16]:
                    query, documents, target = example(i)
                    spans.append((len(texts), len(documents), target))
                    texts += [query] + documents
                vectors = encode(model, texts)
                loss = sum(torch.nn.functional.cross_entropy(
                    (20 * (vectors[s + 1:s + 1 + n] @ vectors[s]))[None], torch.tensor([target]))
                    for s, n, target in spans) / len(spans)
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
        return model

    only = range(FOLDS) if args.only_folds is None else [int(k) for k in args.only_folds.split(",")]
    totals = {"n": 0, "n_answerable": 0, "base": 0, "tuned": 0, "model": 0}
    print(f"{version_path}: {len(inputs)} requests ({len(answerable)} answerable), {FOLDS} folds, "
          f"{args.epochs} epochs, lr {args.lr:g}")
    for k in only:
        started = time.perf_counter()
        train_rows = [i for i in answerable if folds[i] != k]
        held = [i for i in range(len(inputs)) if folds[i] == k]
        encoder_dir = workdir / f"encoder-{k}"
        if args.reuse and is_model_folder(encoder_dir):
            model = load_model(str(encoder_dir))
            print(f"fold {k}: reusing {encoder_dir}")
        else:
            model = fine_tuned(k, train_rows)
            model.save(str(encoder_dir))
        tune_s = time.perf_counter() - started
        base_right, tuned_right = cosine_right(base, held), cosine_right(model, held)
        model_file = workdir / f"model-{k}.json"
        train_decision_model(version_path, model_file, encoder=str(encoder_dir))
        selector = TrainedSelector(options={"model_file": str(model_file)})
        scored = selector._score([inputs[i] for i in held])
        model_right = 0
        for i, result in zip(held, scored):
            names = [t.name for t in inputs[i].tools] + [NONE_LABEL]
            model_right += result is not None and names[int(np.argmax(result[0]))] == labels[i]
        n_answerable = sum(labels[i] != NONE_LABEL for i in held)
        for key, value in (("n", len(held)), ("n_answerable", n_answerable), ("base", base_right),
                           ("tuned", tuned_right), ("model", model_right)):
            totals[key] += value
        print(f"fold {k}: {len(held)} held out; cosine MiniLM {100 * base_right / n_answerable:.1f}%, "
              f"fine-tuned {100 * tuned_right / n_answerable:.1f}% (answerable); decision model on the "
              f"fine-tuned encoder {100 * model_right / len(held):.1f}% (all); fine-tuning {tune_s:.0f} s, "
              f"in all {time.perf_counter() - started:.0f} s", flush=True)
    t = totals
    print(f"all held out: cosine MiniLM {100 * t['base'] / t['n_answerable']:.1f}%, fine-tuned "
          f"{100 * t['tuned'] / t['n_answerable']:.1f}% (of {t['n_answerable']} answerable); decision model on "
          f"the fine-tuned encoders {100 * t['model'] / t['n']:.1f}% (of {t['n']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
