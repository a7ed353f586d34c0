"""A run of ``run_batches`` in a process of its own, for the tests that kill it with SIGKILL.

    python -m tests.batch_child PROVIDER BASE_URL JOURNAL N      (the key in $BATCH_CHILD_KEY)

Prints ``submitted <batch id> <n>`` as each batch is created, then one JSON line of the outcomes
(custom id -> [status, tool name, error])."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tasks.selectors.providers.batch.items import BatchItem, custom_id_for
from tasks.selectors.providers.batch.journal import BatchJournal
from tasks.selectors.providers.batch.run_batches import PollPolicy, run_batches
from tasks.selectors.providers.chat_types import ChatRequest, WireTool

MODELS = {"openai": "gpt-4.1-mini-2025-04-14", "anthropic": "claude-haiku-4-5-20251001"}
TOOLS = (WireTool("get_weather", "The weather in a city.", {"type": "object", "properties": {}}),
         WireTool("book_table", "Book a table.", {"type": "object", "properties": {}}))


def items(provider: str, n: int, run_id: str = "run-batch-test") -> list[BatchItem]:
    """``n`` requests of one model, the same in every process."""
    return [BatchItem(custom_id_for(run_id, "arm-a", 0, f"req-{i}"),
                      ChatRequest(model=MODELS[provider], system="You pick tools.",
                                  messages=(("user", f"request number {i}"),), tools=TOOLS),
                      label=f"{run_id}/arm-a/0/req-{i}")
            for i in range(n)]


def main(argv: list[str]) -> int:
    provider, base_url, journal_path, n = argv[0], argv[1], Path(argv[2]), int(argv[3])

    def submitted(batch_id: str, count: int) -> None:
        print(f"submitted {batch_id} {count}", flush=True)

    with BatchJournal(journal_path) as journal:
        outcomes = run_batches(provider, items(provider, n), journal=journal, base_url=base_url,
                               api_key=os.environ["BATCH_CHILD_KEY"], poll=PollPolicy(first_s=0.05, max_s=0.2),
                               on_submitted=submitted)
    print(json.dumps({cid: [o.status, o.reply.tool_name if o.reply else None, o.error]
                      for cid, o in outcomes.items()}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
