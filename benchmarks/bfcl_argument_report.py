"""BFCL v4 multiple run by ``tooleval run`` through two hosted arms on the loopback server, and its report: the
argument tables of a real run (docs/selection/reports.md, "Arguments").

    .venv/bin/python -m benchmarks.bfcl_argument_report --out "$(mktemp -d)/bfcl"

Imports BFCL_v4_multiple with its possible answers (``../shared/bench/bfcl``) and writes an experiment of two
openai arms on each request's own functions: ``answers``, whose replies are each record's first acceptable
answer, and ``mutated``, whose replies change one parameter per record, cycling through each record's
mutations (another value, another type, left out, an invented parameter: the mutations of
tests/importers/test_bfcl_arguments.py), except on every tenth record offering more than one function,
where it calls another of them with arguments its schema accepts (a confused pair, beside the wrong
arguments). The loopback server (tests/provider_server.py) tells the arms apart
by the model named in the request. Prints the run's report at 80 columns, and how many of the mutated
calls BFCL's checker (that test's independent reading of it) puts in each category.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.importers.test_bfcl_arguments import (  # noqa: E402
    ANSWERS, BFCL_TO_OURS, QUESTIONS, bfcl_verdict, first_answer, mutations, raw_records)
from tests.provider_server import ProviderServer, Seen, tool_call  # noqa: E402
from tests.selectors.providers.example_arguments import example_arguments  # noqa: E402

KEY_ENV = "BFCL_REPLAY_KEY"
MODELS = {"answers": "replay-first-answer", "mutated": "replay-one-mutation"}


def loopback_defaults(port: int, key_env: str, catalogue: str) -> str:
    """An experiment's ``defaults:`` block: openai arms on the loopback server at ``port``, free, unpinned."""
    return f"""defaults:
  catalogue: {catalogue}
  prompt: default
  selector: openai
  options:
    base_url: http://127.0.0.1:{port}/v1
    api_key_env: {key_env}
    prices: {{input: 0, output: 0}}
    model_revision: scripted replies of the loopback server
"""


def experiment_text(port: int) -> str:
    arms = "\n".join(f"  - {{name: {arm}, model: {model}}}" for arm, model in MODELS.items())
    return f"""name: bfcl-multiple-arguments
instrument: selection
description: BFCL v4 multiple replayed through two hosted arms on the loopback server.
taskset: ..
version: v1
seeds: [1]
declared: {{few_seeds: "the replies are replayed answers, the same under every seed"}}
batch_size: 200
{loopback_defaults(port, KEY_ENV, "per_request")}arms:
{arms}
comparisons:
  - {{from: answers, to: mutated, declare: [model]}}
"""


def replies(taskset: Path) -> tuple[dict, Counter]:
    """(model, user text, offered wire names) -> (wire name, call); and BFCL's category of each mutated call of
    the right function."""
    from tasks.selectors.providers.tool_names import wire_name

    raw = raw_records()
    found, categories = {}, Counter()
    for n, line in enumerate((taskset / "v1.jsonl").read_text().splitlines()):
        request = json.loads(line)
        function, answer = raw[request["id"]]
        first = first_answer(answer, function["parameters"]["properties"])
        offered = [wire_name(t["name"]) for t in request["tools"]]
        expected = wire_name(request["expected"])
        text = request["messages"][-1]["content"].strip()
        found[(MODELS["answers"], text, frozenset(offered))] = (expected, first)
        if n % 10 == 9 and len(offered) > 1:  # another function, with arguments its schema accepts
            other = next(t for t in request["tools"] if wire_name(t["name"]) != expected)
            found[(MODELS["mutated"], text, frozenset(offered))] = (wire_name(other["name"]),
                                                                   example_arguments(other["parameters"]))
            categories["another function"] += 1
            continue
        _, mutated = (options := mutations(function, answer, first))[n % len(options)]
        categories[BFCL_TO_OURS.get(bfcl_verdict(function, answer, mutated), "right")] += 1
        found[(MODELS["mutated"], text, frozenset(offered))] = (expected, mutated)
    return found, categories


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="a new folder: the task set and the warehouse")
    args = parser.parse_args(argv)
    from flows.cli import main as tooleval
    from tasks.importers.bfcl import import_bfcl

    taskset, warehouse = args.out / "bfcl-multiple", args.out / "warehouse"
    import_bfcl(QUESTIONS, ANSWERS, taskset)
    calls, categories = replies(taskset)

    def script(seen: Seen):
        return tool_call(*calls[(seen.model, seen.user_text.strip(), frozenset(seen.tools))])

    os.environ[KEY_ENV] = "loopback"
    with ProviderServer(script, record=False) as server:
        experiment = taskset / "experiments" / "arguments.yaml"
        experiment.write_text(experiment_text(server.port))
        os.environ.setdefault("COLUMNS", "80")
        code = tooleval(["run", str(experiment), "--warehouse", str(warehouse)])
    other = categories.pop("another function", 0)
    print(f"mutated arm: another function on {other} records; BFCL's checker on its calls of the right one: "
          + ", ".join(f"{k} {v}" for k, v in sorted(categories.items(), key=lambda kv: (-kv[1], kv[0]))))
    return code


if __name__ == "__main__":
    sys.exit(main())
