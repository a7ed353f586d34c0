"""Out-of-domain abstention: the offline routers on requests from data no decision model here learned from.

    PYTHONPATH=. .venv/bin/python benchmarks/out_of_domain.py [--bench ../shared/bench] [--workdir DIR]
        [--shipped FILE] [--also NAME=FILE ...] [--write docs/measured/out-of-domain.md]

The sets (MetaTool and BFCL from ``--bench``, imported with ``tooleval import``):

- ``support``: the bundled support set's 540 requests on its 30-tool catalogue (answerable and 'none');
- ``metatool`` / ``bfcl``: MetaTool dev10 (2,079 rows as imported) on its 199 tools, BFCL v4 "multiple"
  (200) on each request's own tools: answerable only;
- ``metatool -> support`` / ``bfcl -> support``: the same requests offered the support catalogue instead:
  no tool fits, every one should be 'none' (irrelevant);
- ``bfcl -> metatool``: BFCL's requests offered MetaTool's 199 tools, every one counted 'none' (a few may fit
  a MetaTool tool): how a model trained on a set without 'none' labels (MetaTool's) abstains far from it.

The arms, each a selector with its default 'none' cut-off (offline routers are deterministic and order-blind:
one seed); a run keeps those defaults on a version with 'none' labels and sets ``never`` on one without, so
on the answerable-only sets a run's arms would not abstain at all: the figures there show what the defaults
do to requests of another domain that a tool fits:
``lexical`` (BM25) and ``embedding`` (MiniLM cosine) with their default cut-offs; ``trained on set``: the
model ``tooleval train`` writes now from the set whose catalogue is offered (the support set's for the
support rows; MetaTool's and BFCL's own, cross-fitted on 5 folds, for theirs), scoring its own requests with
the fold models that never saw them; ``shipped``: ``--shipped`` (tasksets/support/models/hybrid.json);
``--also NAME=FILE`` adds a model file as another arm (e.g. the shipped file before a retraining).

``--confirm DIR``: a confirmation on data none of the above was chosen on, BFCL v4's live files (real users'
requests; not in ``--bench``: a folder with ``BFCL_v4_live_multiple.json``, ``BFCL_v4_live_irrelevance.json``
and ``possible_answer/BFCL_v4_live_multiple.json`` from ShishirPatil/gorilla,
berkeley-function-call-leaderboard/bfcl_eval/data/), imported as one set with an ``answerable`` and an
``irrelevant`` slice: ``bfcl live`` on each request's own tools (answerable accuracy, irrelevant caught),
with a model trained on it, and ``bfcl live -> support`` and ``bfcl live -> metatool`` offered the support
and the MetaTool catalogue (all 'none').

Per set and arm: accuracy on the answerable requests and the share of irrelevant requests answered 'none',
each with its 95% Wilson interval, and the ECE of the chosen option's probability over every request,
beside the ECE a perfectly calibrated router with the same confidences would show on as many requests
(median and 95th percentile: the noise floor). ``--write`` puts the tables in a markdown page with the command, the
date and the load at the top.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BENCH = ROOT.parent / "shared" / "bench"
SUPPORT = ROOT / "tasksets" / "support"
SHIPPED = SUPPORT / "models" / "hybrid.json"
SUPPORT_CATALOGUE = "giftcards"


@dataclass(frozen=True)
class Scored:
    """One arm on one set: per request, the label, the choice and its confidence."""

    ids: list[str]
    labels: list[str]
    chosen: list[str | None]
    confidence: list[float]


def import_sets(bench: Path, workdir: Path) -> dict[str, Path]:
    """MetaTool dev10 and BFCL multiple imported as task sets under ``workdir`` (kept when already there)."""
    from flows.cli import main

    out = {"metatool": workdir / "metatool", "bfcl": workdir / "bfcl"}
    if not (out["metatool"] / "v1.jsonl").exists():
        assert main(["import", "metatool", "--out", str(out["metatool"]), str(bench / "metatool" / "plugin_des.json"),
                     str(bench / "metatool" / "all_clean_data.dev10.csv")]) == 0
    if not (out["bfcl"] / "v1.jsonl").exists():
        assert main(["import", "bfcl", "--out", str(out["bfcl"]), str(bench / "bfcl" / "BFCL_v4_multiple.json"),
                     str(bench / "bfcl" / "possible_answer" / "BFCL_v4_multiple.json")]) == 0
    return out


def import_live(live: Path, workdir: Path) -> Path:
    """BFCL v4 live multiple (answerable) and live irrelevance ('none') as two slices of one task set."""
    from flows.cli import main

    out = workdir / "bfcl-live"
    if not (out / "v1.jsonl").exists():
        assert main(["import", "bfcl", "--out", str(out),
                     "--slice", f"answerable={live / 'BFCL_v4_live_multiple.json'},"
                                f"{live / 'possible_answer' / 'BFCL_v4_live_multiple.json'}",
                     "--slice", f"irrelevant={live / 'BFCL_v4_live_irrelevance.json'}",
                     "--label-none", "irrelevant"]) == 0
    return out


def trained_models(sets: dict[str, Path], workdir: Path) -> dict[str, Path]:
    """The model ``tooleval train`` writes from each set's own version (5 folds), trained once per workdir."""
    from tasks.selectors.decision_models.train_decision_model import train_decision_model

    models = {}
    for name, root in {"support": SUPPORT, **sets}.items():
        path = workdir / "models" / f"{name}.json"
        if not path.exists():
            started = time.process_time()
            train_decision_model(root / "v1.jsonl", path)
            print(f"trained on {name}: {time.process_time() - started:.0f} CPU s", file=sys.stderr)
        models[name] = path
    return models


def labelled(root: Path, tools: tuple = ()) -> tuple[list, list[str]]:
    from tasks.selectors.decision_models.labelled_inputs import labelled_inputs
    from tasks.taskset.load_taskset import load_version

    return labelled_inputs(load_version(root, "v1").table, tools)


def evaluation_sets(sets: dict[str, Path]) -> dict[str, tuple[list, list[str], str]]:
    """Set name -> (inputs, labels, the set whose model is 'trained on set')."""
    from schemas.catalogue import NONE_LABEL
    from tasks.selectors.base import SelectionInput
    from tasks.taskset.load_taskset import load_catalogue

    support_tools = tuple(load_catalogue(SUPPORT, SUPPORT_CATALOGUE).tools)
    metatool_tools = tuple(load_catalogue(sets["metatool"], "metatool").tools)
    out = {"support": (*labelled(SUPPORT, support_tools), "support")}
    out["metatool"] = (*labelled(sets["metatool"], metatool_tools), "metatool")
    out["bfcl"] = (*labelled(sets["bfcl"]), "bfcl")
    if "bfcl live" in sets:
        out["bfcl live"] = (*labelled(sets["bfcl live"]), "bfcl live")
    offered = {"support": support_tools, "metatool": metatool_tools}
    for name, catalogue in [(n, c) for n in ("metatool", "bfcl", "bfcl live") if n in out for c in offered
                            if c != n]:
        inputs = [SelectionInput(i.request_id, i.messages, offered[catalogue], i.prompt) for i in out[name][0]]
        out[f"{name} -> {catalogue}"] = (inputs, [NONE_LABEL] * len(inputs), catalogue)
    return out


def score(selector, inputs: list, labels: list[str]) -> Scored:
    selections = selector.select(inputs)
    return Scored([i.request_id for i in inputs], labels, [s.chosen for s in selections],
                  [float(s.confidence or 0.0) for s in selections])


def ece_with_floor(confidence: np.ndarray, right: np.ndarray, request_ids: list[str]) -> str:
    """The ECE, and beside it the ECE a perfectly calibrated router with these confidences shows on this many
    requests: its median and 95th percentile (the noise floor, ``ece_if_calibrated``). A bootstrap interval
    of the ECE itself is biased upward (resampling adds miscalibration noise) and can miss the estimate."""
    from tasks.stats.calibration import ece_if_calibrated, expected_calibration_error

    measured = expected_calibration_error(confidence.tolist(), right.tolist())
    floor = ece_if_calibrated(confidence.tolist(), right.tolist(), request_ids)
    return f"{measured:.3f} (calibrated: {floor.median:.3f}, 95% <= {floor.high:.3f})"


def share(hits: int, n: int) -> str:
    from tasks.stats.wilson import wilson_interval

    if n == 0:
        return "—"
    interval = wilson_interval(hits, n)
    return f"{100 * interval.estimate:.1f}% ({100 * interval.low:.1f}–{100 * interval.high:.1f}), n {n:,}"


def row(arm: str, scored: Scored) -> list[str]:
    from schemas.catalogue import NONE_LABEL

    labels, chosen = np.asarray(scored.labels, dtype=object), np.asarray(scored.chosen, dtype=object)
    right = chosen == labels
    irrelevant = labels == NONE_LABEL
    return [arm, share(int(right[~irrelevant].sum()), int((~irrelevant).sum())),
            share(int(right[irrelevant].sum()), int(irrelevant.sum())),
            ece_with_floor(np.asarray(scored.confidence), right, scored.ids)]


def tables(results: dict[str, dict[str, Scored]]) -> list[str]:
    lines = []
    for set_name, arms in results.items():
        lines += [f"### {set_name}", "", "| arm | answerable accuracy | irrelevant caught | ECE (a calibrated "
                  "router's) |", "|---|---|---|---|"]
        lines += ["| " + " | ".join(row(arm, scored)) + " |" for arm, scored in arms.items()]
        lines.append("")
    return lines


PAGE_HEAD = """# Measured: out of the domain

How the offline routers behave on requests unlike anything the decision models learned from: MetaTool and
BFCL requests offered the support set's catalogue (no tool fits: every one should be 'none'), beside the
same requests on their own tools and the support set's own requests; and BFCL requests offered MetaTool's
catalogue, where "trained on set" is MetaTool's model, trained without a 'none' label. Generated by
`benchmarks/out_of_domain.py` (its docstring says what each set and arm is); the intervals are 95% Wilson
intervals; beside each ECE, the ECE a perfectly calibrated router with the same confidences would show on
as many requests (median, and 95% at or below: the noise floor); offline routers are deterministic, so one
seed.
Every arm keeps its default 'none' cut-off, as a router meets unlabelled traffic (a run on a version
without 'none' labels, such as the two answerable-only sets, would set `never`, and no arm would abstain).
"Trained on set" is the model `tooleval train` writes from the set whose catalogue is offered (the support
set's on the support rows), scoring its own requests with the fold models that never saw them. An `--also`
arm is a model file named on the command line: "shipped before retraining" below is the file as shipped
until 2026-12-07 (`git show c967d4d^:tasksets/support/models/hybrid.json > hybrid-before.json`).
The `bfcl live` sets (`--confirm`, when shown) are the confirmation: BFCL v4's live multiple and live
irrelevance files, real users' requests that no setting of the routers or of the decision model's abstention
was chosen on (they are not in the project's bench data): on their own tools with a model trained on them
(cross-fitted), and offered the support and the MetaTool catalogue.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    parser.add_argument("--workdir", type=Path, default=None, help="imports and trained models (default: temporary)")
    parser.add_argument("--shipped", type=Path, default=SHIPPED)
    parser.add_argument("--also", action="append", default=[], metavar="NAME=FILE", help="another model file as an arm")
    parser.add_argument("--write", type=Path, default=None, help="the markdown page to write")
    parser.add_argument("--confirm", type=Path, default=None, metavar="DIR",
                        help="BFCL v4 live files: a confirmation on data nothing here was chosen on")
    args = parser.parse_args(argv)

    from tasks.selectors.decision_models.trained import TrainedSelector
    from tasks.selectors.routers.embedding import EmbeddingSelector
    from tasks.selectors.routers.lexical import LexicalSelector

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="tooleval-ood-"))
    load_before = os.getloadavg()[0]
    started_wall, started_cpu = time.perf_counter(), time.process_time()
    sets = import_sets(args.bench, workdir)
    if args.confirm:
        sets["bfcl live"] = import_live(args.confirm, workdir)
    fresh = not (workdir / "models").exists()
    models = trained_models(sets, workdir)
    routers = {"lexical": LexicalSelector(), "embedding": EmbeddingSelector()}
    files = {"shipped": args.shipped, **dict(spec.split("=", 1) for spec in args.also)}
    results: dict[str, dict[str, Scored]] = {}
    for set_name, (inputs, labels, trained_on) in evaluation_sets(sets).items():
        arms = {name: selector for name, selector in routers.items()}
        arms["trained on set"] = TrainedSelector(options={"model_file": str(models[trained_on])})
        arms |= {name: TrainedSelector(options={"model_file": str(path)}) for name, path in files.items()}
        results[set_name] = {name: score(selector, inputs, labels) for name, selector in arms.items()}
        print(f"scored {set_name}", file=sys.stderr)
    body = tables(results)
    print("\n".join(body))
    cost = (f"{time.perf_counter() - started_wall:.0f} s wall, {time.process_time() - started_cpu:.0f} CPU s, "
            f"load {load_before:.1f} -> {os.getloadavg()[0]:.1f}"
            + ("" if fresh else "; the sets and models of an earlier run of --workdir reused"))
    print(cost, file=sys.stderr)
    if args.write:
        also = [f"--also '{name}={Path(path).name}'" for name, path in (spec.split("=", 1) for spec in args.also)]
        confirm = ["--confirm", "BFCL_LIVE_DIR"] if args.confirm else []
        shown = " ".join(["PYTHONPATH=. .venv/bin/python benchmarks/out_of_domain.py", *also, *confirm, "--write",
                          str(args.write)])
        when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        args.write.write_text(PAGE_HEAD + f"\nMeasured {when} ({cost}):\n\n```sh\n{shown}\n```\n\n"
                              + "\n".join(body))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
