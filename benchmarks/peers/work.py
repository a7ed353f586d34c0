"""The peers' copy of the start-up benchmark's work: the support set's requests and 30-tool catalogue.

Read straight from the task-set files (not through tooleval's loader, which is being changed), so that
promptfoo and Inspect AI get exactly the requests and tools that ``one_arm.yaml`` gives tooleval.
"""

from __future__ import annotations

import json
from pathlib import Path

PEERS = Path(__file__).resolve().parent
TASKSET = (PEERS / ".." / ".." / "tasksets" / "support").resolve()
VERSION = "v1"
CATALOGUE = "giftcards"
SEEDS = 3
"""Repeats of each request: tooleval's seeds [1, 2, 3], promptfoo's --repeat, Inspect's epochs."""


def requests(taskset: Path = TASKSET, version: str = VERSION) -> list[dict]:
    lines = (taskset / f"{version}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def catalogue_tools(taskset: Path = TASKSET, name: str = CATALOGUE) -> list[dict]:
    """The catalogue's tools with the ones it extends, inherited first (as tooleval resolves them)."""
    chain: list[dict] = []
    current: str | None = name
    while current:
        file = json.loads((taskset / "catalogues" / f"{current}.json").read_text(encoding="utf-8"))
        chain.append(file)
        current = file.get("extends")
    return [tool for file in reversed(chain) for tool in file["tools"]]


def system_prompt(taskset: Path = TASKSET) -> str:
    return (taskset / "prompts" / "default.md").read_text(encoding="utf-8").strip()


def conversation_text(messages: list[dict]) -> str:
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages)


def openai_tools(tools: list[dict]) -> list[dict]:
    return [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                              "parameters": t["parameters"]}} for t in tools]


TOOL_NAME_ASSERT = ("(Array.isArray(output) && output.length ? output[0].function.name : 'none')"
                    " === context.vars.expected")
"""promptfoo javascript assertion: the first tool call's name (or 'none' for a text reply) is the label."""


def write_promptfoo_config(folder: Path, provider_js: Path = PEERS / "instant_provider.js") -> Path:
    """promptfooconfig.json: the system prompt + conversation, the instant provider offered the 30 tools,
    one test per request (``--repeat 3`` makes the seeds), one tool-name assertion for every test.

    The tools are a file the provider reads once (``tools_file``), not its config: promptfoo copies a
    provider's config into every stored result, passing it through its secret masking each time, which
    for 30 tool schemas cost 8-10 of its ~22 CPU s at 1,620 rows. tooleval stores a catalogue once, not
    per row, so the copy is left out of promptfoo's work too."""
    tools = openai_tools(catalogue_tools())
    tools_file = folder / "tools.json"
    tools_file.write_text(json.dumps(tools), encoding="utf-8")
    config = {
        "description": f"tooleval start-up peer: support {VERSION}, {CATALOGUE} ({len(tools)} tools)",
        "prompts": [system_prompt().replace("{", "{{ '{' }}") + "\n\n{{ conversation }}"],
        "providers": [{"id": f"file://{provider_js}", "label": "instant-tool-caller",
                       "config": {"tools_file": str(tools_file), "tool_choice": "auto"}}],
        "defaultTest": {"assert": [{"type": "javascript", "value": TOOL_NAME_ASSERT}]},
        "tests": [{"description": r["id"], "vars": {"conversation": conversation_text(r["messages"]),
                                                    "expected": r["expected"]},
                   "metadata": {"slice": r.get("slice", "")}} for r in requests()],
        "sharing": False,
    }
    path = folder / "promptfooconfig.json"
    path.write_text(json.dumps(config, indent=1), encoding="utf-8")
    return path


def write_inspect_dataset(folder: Path) -> Path:
    """samples.jsonl for benchmarks/peers/inspect_task.py: input messages, target = expected tool."""
    path = folder / "samples.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for r in requests():
            out.write(json.dumps({"id": r["id"], "input": r["messages"], "target": r["expected"],
                                  "metadata": {"slice": r.get("slice", "")}}) + "\n")
    return path
