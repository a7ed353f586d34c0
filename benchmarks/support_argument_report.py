"""The support set's v2 (expected arguments on 301 of its requests) run by ``tooleval run`` through a hosted
arm on the loopback server whose calls carry scripted faults, and its report's argument tables
(docs/selection/reports.md, "Arguments").

    .venv/bin/python -m benchmarks.support_argument_report --out "$(mktemp -d)/support"

Copies tasksets/support, keeps v2's single-turn requests (485, 264 with expected arguments; frozen again on
v1) and runs one openai arm under three seeds on the full catalogue against the loopback server
(tests/provider_server.py). The scripted model calls the expected tool with the expected values (the first
acceptable one; the schema's required parameters filled), except: every fourth refund_order call (from the
second) invents a reason the enum lacks, and every fourth (from the fourth) leaves out the required
order_id; every second check_gift_card_balance call adds a 'pin' the schema lacks; every third
cancel_subscription call names the other subscription; every third open_dispute request is answered with
refund_order (a confused pair). A request labelled 'none' gets a text reply. Prints the report at 80
columns.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bfcl_argument_report import loopback_defaults  # noqa: E402
from tests.factories.catalogues import support_tools  # noqa: E402
from tests.provider_server import ProviderServer, Seen, text_reply, tool_call  # noqa: E402
from tests.selectors.providers.example_arguments import example_arguments  # noqa: E402

KEY_ENV = "SUPPORT_REPLAY_KEY"
EXPERIMENT = """name: support-arguments
instrument: selection
description: The support set's v2 through a scripted hosted model on the loopback server.
taskset: ..
version: v2
seeds: [1, 2, 3]
{defaults}arms:
  - {{name: scripted, model: scripted-support-model}}
"""


def single_turn_v2(support: Path) -> list[dict]:
    """The copy's v2 cut to its single-turn requests, frozen again (parent v1)."""
    from tasks.taskset.load_taskset import freeze_version

    kept = [r for r in map(json.loads, (support / "v2.jsonl").read_text().splitlines()) if len(r["messages"]) == 1]
    (support / "v2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    adjudications = support / "v2.adjudications.jsonl"
    ids = {r["id"] for r in kept}
    adjudications.write_text("".join(line + "\n" for line in adjudications.read_text().splitlines()
                                     if json.loads(line)["request_id"] in ids))
    (support / "v2.manifest.json").unlink()
    freeze_version(support, "v2", ["existing", "new_tools"], parent="v1")
    return kept


def expected_values(expected: dict[str, Any]) -> dict[str, Any]:
    """The first acceptable value of each expected parameter (one that may be omitted is left out)."""
    values = {}
    for name, matcher in expected.items():
        if matcher.get("may_be_omitted"):
            continue
        values[name] = matcher["equals"] if "equals" in matcher else matcher["one_of"][0]
    return values


def scripted_calls(requests: list[dict]) -> dict[str, tuple[str, dict]]:
    """User text -> (tool, arguments) the scripted model sends."""
    schemas = {t.name: t.parameters for t in support_tools()}
    seen: dict[str, int] = defaultdict(int)
    calls = {}
    for r in requests:
        tool, text = r["expected"], r["messages"][0]["content"].strip()
        if tool == "none":
            continue
        call = {**example_arguments(schemas[tool]), **expected_values(r.get("expected_arguments") or {})}
        k = seen[tool]
        seen[tool] += 1
        if tool == "refund_order" and k % 4 == 1:
            call["reason"] = "arrived_late"  # not in the enum
        elif tool == "refund_order" and k % 4 == 3:
            call.pop("order_id", None)  # required
        elif tool == "check_gift_card_balance" and k % 2 == 0:
            call["pin"] = "0000"  # the schema has no pin
        elif tool == "cancel_subscription" and k % 3 == 0:
            chosen = call.get("subscription", "northwind_plus")
            call["subscription"] = "coffee_club" if chosen == "northwind_plus" else "northwind_plus"
        elif tool == "open_dispute" and k % 3 == 0:
            tool, call = "refund_order", {**example_arguments(schemas["refund_order"]),
                                          **({"order_id": call["order_id"]} if "order_id" in call else {})}
        calls[text] = (tool, call)
    return calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="a new folder: the task set and the warehouse")
    args = parser.parse_args(argv)
    from flows.cli import main as tooleval

    support = args.out / "support"
    shutil.copytree(ROOT / "tasksets" / "support", support)
    calls = scripted_calls(single_turn_v2(support))

    def script(seen: Seen):
        call = calls.get(seen.user_text.strip())
        return text_reply() if call is None else tool_call(*call)

    os.environ[KEY_ENV] = "loopback"
    os.environ.setdefault("COLUMNS", "80")
    with ProviderServer(script, record=False) as server:
        experiment = support / "experiments" / "arguments.yaml"
        experiment.write_text(EXPERIMENT.format(defaults=loopback_defaults(server.port, KEY_ENV, "giftcards")))
        return tooleval(["run", str(experiment), "--warehouse", str(args.out / "warehouse")])


if __name__ == "__main__":
    sys.exit(main())
