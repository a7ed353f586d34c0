"""Accuracy and speed of the offline routers on public data (MetaTool, BFCL "multiple").

    python benchmarks/offline_selectors.py [--bench DIR] [--seeds 3] [--only lexical|embedding]
        [--lexical-options JSON] [--embedding-options JSON]

Prints, per selector and data set: accuracy per seed (each seed a permutation of the tool order), how
often "none" was picked (neither set has a "none" label, so every abstention is a miss), mean confidence,
requests/s on the first pass (index building, tokenizing / encoding) and on a repeat (caches warm), and
the lexical router's ms per request on a 30-tool catalogue in batches of 200.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import time
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from schemas.catalogue import ToolSpec  # noqa: E402
from schemas.taskset import Message  # noqa: E402
from tasks.selectors.base import SelectionInput  # noqa: E402

DEFAULT_BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"
BATCH = 200

Labelled = tuple[list[SelectionInput], list[str]]


def load_metatool(bench: Path) -> Labelled:
    """MetaTool dev10: one shared catalogue of 199 tools, 2,079 single-turn requests."""
    described = json.loads((bench / "metatool" / "plugin_des.json").read_text())
    tools = tuple(ToolSpec(name=name, description=text) for name, text in described.items())
    inputs, expected = [], []
    with open(bench / "metatool" / "all_clean_data.dev10.csv", newline="") as handle:
        for n, row in enumerate(csv.DictReader(handle)):
            messages = (Message(role="user", content=row["Query"]),)
            inputs.append(SelectionInput(f"metatool-{n}", messages, tools, ""))
            expected.append(row["Tool"])
    return inputs, expected


def load_bfcl(bench: Path) -> Labelled:
    """BFCL v4 "multiple": 200 requests, each with its own 2-4 tools."""
    answers = {}
    for line in (bench / "bfcl" / "possible_answer" / "BFCL_v4_multiple.json").read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            answers[record["id"]] = next(iter(record["ground_truth"][0]))
    inputs, expected = [], []
    for line in (bench / "bfcl" / "BFCL_v4_multiple.json").read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        tools = tuple(
            ToolSpec(name=f["name"], description=f.get("description", ""), parameters=f.get("parameters", {}))
            for f in record["function"]
        )
        messages = tuple(
            Message(role=m["role"], content=m["content"]) for m in record["question"][0] if m["role"] != "tool"
        )
        inputs.append(SelectionInput(record["id"], messages, tools, ""))
        expected.append(answers[record["id"]])
    return inputs, expected


def permuted(inputs: Sequence[SelectionInput], seed: int) -> list[SelectionInput]:
    """The inputs with their tools in seed ``seed``'s order (seed 0 = the file's order)."""
    if seed == 0:
        return list(inputs)
    rng = random.Random(seed)
    orders: dict[int, tuple] = {}  # one order per tools tuple (the shared catalogue is one object)
    out = []
    for item in inputs:
        order = orders.get(id(item.tools))
        if order is None:
            shuffled = list(item.tools)
            rng.shuffle(shuffled)
            order = orders[id(item.tools)] = tuple(shuffled)
        out.append(SelectionInput(item.request_id, item.messages, order, item.prompt))
    return out


def run(selector, inputs: Sequence[SelectionInput]) -> tuple[list, float]:
    started = time.perf_counter()
    selections = []
    for start in range(0, len(inputs), BATCH):
        selections.extend(selector.select(inputs[start : start + BATCH]))
    return selections, time.perf_counter() - started


def evaluate(name: str, make_selector, data: dict[str, Labelled], seeds: int) -> None:
    selector = make_selector()
    print(f"\n== {name}: {selector.kind} {selector.model_id}")
    if hasattr(selector, "load"):  # the embedding model: load time apart from the requests/s
        started = time.perf_counter()
        selector.load()
        print(f"model load {time.perf_counter() - started:.1f} s")
    for set_name, (inputs, expected) in data.items():
        accuracies, nones, confidences = [], [], []
        first_rate = warm_rate = 0.0
        for seed in range(seeds):
            ordered = permuted(inputs, seed)
            selections, elapsed = run(selector, ordered)
            if seed == 0:
                first_rate = len(ordered) / elapsed
                _, elapsed = run(selector, ordered)
                warm_rate = len(ordered) / elapsed
            accuracies.append(sum(s.chosen == e for s, e in zip(selections, expected)) / len(expected))
            nones.append(sum(s.chosen == "none" for s in selections) / len(expected))
            confidences.append(sum(s.confidence for s in selections) / len(expected))
        per_seed = " ".join(f"{a:.1%}" for a in accuracies)
        print(
            f"{set_name:9s} n={len(expected):5d} accuracy {sum(accuracies) / seeds:6.1%} (seeds: {per_seed})"
            f"  none {sum(nones) / seeds:5.1%}  mean confidence {sum(confidences) / seeds:.2f}"
            f"  req/s first pass {first_rate:8.0f}  warm {warm_rate:8.0f}"
        )


def lexical_30_tools(bench: Path, options: dict) -> None:
    """ms per request of the lexical router on a 30-tool catalogue, batches of 200, caches warm."""
    from tasks.selectors.routers.lexical import LexicalSelector

    inputs, expected = load_metatool(bench)
    tools = inputs[0].tools[:30]
    names = {tool.name for tool in tools}
    requests = [SelectionInput(i.request_id, i.messages, tools, "") for i, e in zip(inputs, expected) if e in names]
    requests = (requests * (2000 // max(len(requests), 1) + 1))[:2000]
    selector = LexicalSelector(options=options)
    run(selector, requests)  # warm the index and tokenizer caches
    best = min(run(selector, requests)[1] for _ in range(5))
    print(f"\nlexical, 30 tools, batches of {BATCH}: {best / len(requests) * 1000:.3f} ms per request "
          f"({len(requests) / best:.0f} requests/s, warm, best of 5)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--only", choices=["lexical", "embedding"])
    parser.add_argument("--lexical-options", type=json.loads, default={})
    parser.add_argument("--embedding-options", type=json.loads, default={})
    args = parser.parse_args()

    data = {"metatool": load_metatool(args.bench), "bfcl": load_bfcl(args.bench)}
    if args.only in (None, "lexical"):
        from tasks.selectors.routers.lexical import LexicalSelector

        evaluate("lexical", lambda: LexicalSelector(options=args.lexical_options), data, args.seeds)
        lexical_30_tools(args.bench, args.lexical_options)
    if args.only in (None, "embedding"):
        from tasks.selectors.routers.embedding import EmbeddingSelector

        evaluate("embedding", lambda: EmbeddingSelector(options=args.embedding_options), data, args.seeds)


if __name__ == "__main__":
    main()
