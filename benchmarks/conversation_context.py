"""How much of a conversation the offline routers should read (``context_turns``): accuracy of the lexical and
embedding routers on dialogues built from single-turn sets, and on the support set's own dialogues.

    python benchmarks/conversation_context.py [--bench DIR] [--sets support,bfcl,metatool] [--turns 0,1,2,4]
        [--decay 0.5] [--limit N] [--trained]

Dialogues, built offline from each set's single-turn requests (label: the request's):

- ``single``: the request alone;
- ``confirm``: the request, a generic assistant check ("Just to check before I go ahead: is that what you
  need?"), then a confirmation ("yes, that's right", "yes please", ...);
- ``switch``: another request of the set with another label, "Done. Anything else?", then the request: the
  earlier turns point at the wrong tool;
- ``switch+confirm``: ``switch``, then the check and a confirmation.

Read as: the last user turn after N earlier turns, joined (``concat``: what the routers do), with the
earlier turns' roles ``user+assistant`` (the routers' rule) or ``user`` only; and a decay weighting: the
router's score of each turn alone, the k-th earlier weighted w^k, summed (BM25 and the cosine are linear in
the query, so this is a per-turn weighting of the query); and a ``fallback``: the last turn alone where
its best tool reaches the router's default 'none' cut-off, else the N earlier turns too. Accuracy over
answerable requests, no abstaining. The support set (``support-real``) is read as it is: its multi-turn requests apart.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from offline_selectors import DEFAULT_BENCH, load_metatool  # noqa: E402

from schemas.catalogue import NONE_LABEL  # noqa: E402
from schemas.taskset import Message  # noqa: E402
from tasks.selectors.base import SelectionInput  # noqa: E402
from tasks.selectors.routers import conversation  # noqa: E402
from tasks.selectors.routers.embedding import EmbeddingSelector  # noqa: E402
from tasks.selectors.routers.lexical import LexicalSelector  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CHECK = "Just to check before I go ahead: is that what you need?"
CONFIRMATIONS = ("yes, that's right", "yes please", "correct", "yep, go ahead", "exactly", "sure, do it")
DONE = "Done. Anything else?"
Labelled = tuple[list[SelectionInput], list[str]]


def load_version_inputs(folder: Path, version: str = "v1") -> Labelled:
    from tasks.selectors.decision_models.labelled_inputs import catalogue_union, labelled_inputs
    from tasks.taskset.load_taskset import load_version

    shared, offered_as = catalogue_union(folder)
    return labelled_inputs(load_version(folder, version).table, shared, offered_as=offered_as)


def load_bfcl(bench: Path) -> Labelled:
    """BFCL v4 "multiple" as `tooleval import bfcl` writes it (each request its own 2-4 tools)."""
    import tempfile

    from tasks.importers.bfcl import import_bfcl

    folder = Path(tempfile.mkdtemp()) / "bfcl"
    import_bfcl(bench / "bfcl" / "BFCL_v4_multiple.json", bench / "bfcl" / "possible_answer" / "BFCL_v4_multiple.json",
                folder)
    return load_version_inputs(folder)


def dialogues(inputs: Sequence[SelectionInput], labels: Sequence[str], kind: str, seed: int = 0
              ) -> list[SelectionInput]:
    """Each single-turn input as a dialogue of ``kind`` (see the module docstring)."""
    rng = random.Random(seed)
    out = []
    for i, item in enumerate(inputs):
        user = Message(role="user", content=item.text)
        turns: list[Message] = [user]
        if "switch" in kind:
            j = rng.randrange(len(inputs))
            while labels[j] == labels[i] or not inputs[j].text.strip():
                j = rng.randrange(len(inputs))
            turns = [Message(role="user", content=inputs[j].text), Message(role="assistant", content=DONE), user]
        if "confirm" in kind:
            turns += [Message(role="assistant", content=CHECK),
                      Message(role="user", content=CONFIRMATIONS[rng.randrange(len(CONFIRMATIONS))])]
        out.append(SelectionInput(item.request_id, tuple(turns), item.tools, item.prompt))
    return out


def accuracy(scores: Sequence[np.ndarray | None], inputs: Sequence[SelectionInput], labels: Sequence[str]
             ) -> float:
    right = [s is not None and len(s) > 0 and item.tools[int(np.argmax(s))].name == label
             for s, item, label in zip(scores, inputs, labels)]
    return 100.0 * float(np.mean(right))


def concat_scores(kind: str, turns: int, roles: tuple[str, ...], inputs: Sequence[SelectionInput]) -> list:
    conversation.CONTEXT_ROLES = roles
    options = {"abstain_threshold": "never", "context_turns": turns}
    router = (LexicalSelector(options=options) if kind == "lexical"
              else EmbeddingSelector(options={**options, "context_below": None}))
    return router.scores(inputs)


def fallback_scores(kind: str, turns: int, inputs: Sequence[SelectionInput]) -> list:
    """The last user turn alone where its best tool reaches the router's default 'none' cut-off, else the
    last turn after ``turns`` earlier turns: earlier turns read only when the last one says too little."""
    conversation.CONTEXT_ROLES = ("user", "assistant")
    alone, read = (concat_scores(kind, n, ("user", "assistant"), inputs) for n in (0, turns))
    cutoff = (LexicalSelector if kind == "lexical" else EmbeddingSelector)().abstain_threshold  # 0.1, 0.25
    return [a if a is not None and len(a) and a.max() >= cutoff else r for a, r in zip(alone, read)]


def decay_scores(kind: str, turns: int, weight: float, roles: tuple[str, ...], inputs: Sequence[SelectionInput],
                 alone: Callable[[Sequence[SelectionInput]], list]) -> list:
    """Sum over the last user turn and ``turns`` earlier turns (of ``roles``) of weight^k x the turn's score."""
    pieces: list[list[tuple[float, SelectionInput]]] = []
    flat: list[SelectionInput] = []
    for item in inputs:
        last = max(i for i, m in enumerate(item.messages) if m.role == "user")
        earlier = [m for m in item.messages[:last] if m.role in roles and m.content.strip()]
        chosen = [item.messages[last], *reversed(earlier)][: turns + 1]
        pieces.append([(weight ** k, SelectionInput(item.request_id, (Message(role="user", content=m.content),),
                                                    item.tools, "")) for k, m in enumerate(chosen)])
        flat.extend(p for _, p in pieces[-1])
    scored = iter(alone(flat))
    out = []
    for parts in pieces:
        total = None
        for w, _ in parts:
            s = next(scored)
            if s is not None:
                total = w * s if total is None else total + w * s
        out.append(total)
    return out


def synthetic_support(root: Path) -> Path:
    """The support set's single-turn requests as dialogues, in turn single, confirm, switch, switch+confirm
    (the slice names the kind), frozen as v1 of a new set at ``root``: what the trained model learns from."""
    import json
    import shutil

    from tasks.taskset.load_taskset import freeze_version

    support = ROOT / "tasksets" / "support"
    shutil.copytree(support / "catalogues", root / "catalogues")
    shutil.copytree(support / "prompts", root / "prompts")
    records = [json.loads(line) for line in (support / "v1.jsonl").read_text().splitlines()]
    records = [r for r in records if len(r["messages"]) == 1 and "fallback" not in r]
    inputs = [SelectionInput(r["id"], (Message(**r["messages"][0]),), (), "") for r in records]
    labels = [r["expected"] for r in records]
    kinds = ("single", "confirm", "switch", "switch+confirm")
    built = {kind: dialogues(inputs, labels, kind) for kind in kinds[1:]}
    lines = []
    for i, record in enumerate(records):
        kind = kinds[i % len(kinds)]
        messages = record["messages"] if kind == "single" else [m.model_dump() for m in built[kind][i].messages]
        lines.append(json.dumps({**record, "messages": messages, "slice": kind.replace("+", "-")}))
    (root / "v1.jsonl").write_text("\n".join(lines) + "\n")
    freeze_version(root, "v1", [k.replace("+", "-") for k in kinds])
    return root


def trained_rows(turn_counts: Sequence[int], work: Path) -> None:
    """Cross-fitted accuracy of a decision model trained with each ``context_turns`` (every request scored by
    the fold model that never saw it), on the support set as it is and on its dialogues (``synthetic_support``),
    per slice / single- and multi-turn, answerable requests, no abstaining."""
    from tasks.selectors.decision_models.train_decision_model import train_decision_model
    from tasks.selectors.decision_models.trained import TrainedSelector

    sets = {"support": ROOT / "tasksets" / "support", "support dialogues": synthetic_support(work / "dialogues")}
    for name, folder in sets.items():
        inputs, labels = load_version_inputs(folder)
        from tasks.taskset.load_taskset import load_version

        slices = load_version(folder, "v1").table.get_column("slice").to_list()
        tags = [("multi-turn" if sum(m.role == "user" for m in item.messages) > 1 else "single-turn")
                if name == "support" else s for item, s in zip(inputs, slices)]
        figures: dict[str, list[float]] = {}
        for n in turn_counts:
            path = work / f"{name.replace(' ', '-')}-{n}.json"
            train_decision_model(folder / "v1.jsonl", path, context_turns=n)
            selections = TrainedSelector(options={"model_file": str(path), "abstain_threshold": "never"}).select(inputs)
            for tag in sorted(set(tags)):
                rows = [i for i, t in enumerate(tags) if t == tag and labels[i] != NONE_LABEL]
                right = [selections[i].chosen == labels[i] for i in rows]
                figures.setdefault(f"{tag} | {len(rows)}", []).append(100.0 * float(np.mean(right)))
        for tag, values in figures.items():
            print(f"| {name} | {tag} | trained | concat, user+assistant | "
                  + " | ".join(f"{v:.1f}" for v in values) + " |", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    parser.add_argument("--sets", default="support,bfcl,metatool")
    parser.add_argument("--turns", default="0,1,2,4")
    parser.add_argument("--decay", default="0.5")
    parser.add_argument("--trained", action="store_true",
                        help="the trained model instead (tooleval train per N, on support and its dialogues)")
    parser.add_argument("--limit", type=int, default=0, help="the first N answerable requests of each set (0: all)")
    args = parser.parse_args(argv)
    turn_counts = [int(t) for t in args.turns.split(",")]
    decays = [float(w) for w in args.decay.split(",") if w]
    loaders = {"support": lambda: load_version_inputs(ROOT / "tasksets" / "support"),
               "bfcl": lambda: load_bfcl(args.bench), "metatool": lambda: load_metatool(args.bench)}
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; accuracy % on answerable requests, "
          "no abstaining")
    header = ["set", "dialogues", "n", "router", "read as", *[f"N={n}" for n in turn_counts]]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    if args.trained:
        import tempfile

        trained_rows(turn_counts, Path(tempfile.mkdtemp()))
        return 0
    for name in args.sets.split(","):
        inputs, labels = loaders[name]()
        answerable = [i for i, label in enumerate(labels) if label != NONE_LABEL and inputs[i].tools]
        answerable = answerable[: args.limit or None]
        inputs, labels = [inputs[i] for i in answerable], [labels[i] for i in answerable]
        groups: dict[str, list[SelectionInput]] = {}
        group_labels: dict[str, list[str]] = {}
        if name == "support":
            multi = [sum(m.role == "user" for m in item.messages) > 1 for item in inputs]
            for tag, want in (("real multi-turn", True), ("real single-turn", False)):
                groups[tag] = [item for item, m in zip(inputs, multi) if m == want]
                group_labels[tag] = [label for label, m in zip(labels, multi) if m == want]
            single = [i for i, m in enumerate(multi) if not m]
            inputs, labels = [inputs[i] for i in single], [labels[i] for i in single]
        for kind in ("confirm", "switch", "switch+confirm"):
            groups[kind] = dialogues(inputs, labels, kind)
            group_labels[kind] = labels
        for tag, items in groups.items():
            for router in ("lexical", "embedding"):
                rows = []
                for roles in (("user", "assistant"), ("user",)):
                    shown = "+".join(roles)
                    rows.append((f"concat, {shown}", [accuracy(concat_scores(router, n, roles, items), items,
                                                               group_labels[tag]) for n in turn_counts]))
                    alone = EmbeddingSelector if router == "embedding" else LexicalSelector
                    base = alone(options={"abstain_threshold": "never"})
                    for w in decays:
                        rows.append((f"decay {w:g}, {shown}", [
                            accuracy(decay_scores(router, n, w, roles, items, base.scores), items, group_labels[tag])
                            for n in turn_counts]))
                rows.append(("fallback, user+assistant", [accuracy(fallback_scores(router, n, items), items,
                                                                   group_labels[tag]) for n in turn_counts]))
                for read_as, figures in rows:
                    cells = [f"{a:.1f}" for a in figures]
                    print(f"| {name} | {tag} | {len(items)} | {router} | {read_as} | " + " | ".join(cells) + " |",
                          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
