"""Inspect AI's side of benchmarks/startup_vs_peers.py (``--with-inspect``); runs in the Inspect venv.

    <cache>/inspect-0.3.285/bin/python benchmarks/peers/inspect_task.py --samples samples.jsonl \
        [--epochs 3] [--log-dir DIR]

One task: every request of the support set (samples.jsonl, written by work.py) x ``--epochs``, the
system prompt, the 30 tools of the giftcards catalogue offered with ``use_tools``, one ``generate``
(tool calls not executed) and a scorer on the first tool call's name ('none' for a text reply). The model
is Inspect's mockllm with a callable that answers at once, in process, with a tool call to the expected
tool, and gives its usage (zero tokens) so mockllm never counts tokens with tiktoken (which would download
its encoding). Prints ``inspect: N samples scored`` for the benchmark's check.
"""

from __future__ import annotations

import argparse
import json
from typing import Awaitable, Callable
import sys
from pathlib import Path

from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import json_dataset
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate, system_message, use_tools
from inspect_ai.tool import ToolDef, ToolParams

sys.path.insert(0, str(Path(__file__).resolve().parent))

import work  # noqa: E402


def _conversation_key(messages) -> str:
    return json.dumps([[m.role, m.text] for m in messages if m.role != "system"])


def catalogue_tool_defs() -> list[ToolDef]:
    def never_called() -> Callable[..., Awaitable[str]]:
        """A coroutine of its own per tool: Inspect registers a tool under its function object, so one
        function shared by 30 ToolDefs made every tool the model saw carry the last name and schema."""
        async def call(**_kwargs) -> str:  # generate(tool_calls="none"): the call is only scored
            return ""
        return call

    def params(schema: dict) -> ToolParams:
        # Inspect insists on a description for every parameter; the catalogue leaves a few self-explanatory.
        properties = {name: {"description": name.replace("_", " "), **spec}
                      for name, spec in schema.get("properties", {}).items()}
        return ToolParams.model_validate({**schema, "properties": properties})

    return [ToolDef(never_called(), name=t["name"], description=t["description"], parameters=params(t["parameters"]))
            for t in work.catalogue_tools()]


def instant_model(expected_by_conversation: dict[str, str]):
    usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)

    def answer(input, tools, tool_choice, config) -> ModelOutput:  # noqa: A002 (mockllm's signature)
        expected = expected_by_conversation.get(_conversation_key(input), "none")
        if expected == "none":
            output = ModelOutput.from_content(model="instant", content="Could you tell me a little more?")
        else:
            output = ModelOutput.for_tool_call(model="instant", tool_name=expected, tool_arguments={})
        output.usage = usage
        return output

    return get_model("mockllm/model", custom_outputs=answer)


@scorer(metrics=[accuracy()])
def tool_name():
    async def score(state: TaskState, target: Target) -> Score:
        calls = state.output.message.tool_calls if state.output and state.output.message else None
        chosen = calls[0].function if calls else "none"
        return Score(value=CORRECT if chosen == target.text else INCORRECT, answer=chosen)

    return score


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=Path, required=True)
    parser.add_argument("--epochs", type=int, default=work.SEEDS)
    parser.add_argument("--log-dir", default=None)
    args = parser.parse_args()

    dataset = json_dataset(str(args.samples))
    expected = {_conversation_key_from_dicts(r["messages"]): r["expected"] for r in work.requests()}
    task = Task(dataset=dataset, solver=[system_message(work.system_prompt()), use_tools(catalogue_tool_defs()),
                                         generate(tool_calls="none")],
                scorer=tool_name(), epochs=args.epochs, name="support-tool-selection")
    logs = inspect_eval(task, model=instant_model(expected), log_dir=args.log_dir, display="plain")
    log = logs[0]
    if log.status != "success" or log.results is None:
        print(f"inspect: run ended {log.status}: {log.error.message if log.error else ''}", file=sys.stderr)
        return 1
    scored = log.results.completed_samples
    accuracy_value = next(iter(log.results.scores[0].metrics.values())).value if log.results.scores else None
    print(f"inspect: {scored:,} samples scored ({log.results.total_samples:,} total), accuracy {accuracy_value}")
    return 0


def _conversation_key_from_dicts(messages: list[dict]) -> str:
    return json.dumps([[m["role"], m["content"]] for m in messages])


if __name__ == "__main__":
    sys.exit(main())
