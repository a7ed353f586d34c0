"""Inspect AI's side of benchmarks/task_harness.py (part 3); runs in the Inspect venv.

    <inspect venv>/bin/python benchmarks/peers/inspect_agent_tasks.py --spec spec.json [--epochs 2] [--log-dir DIR]

The same scripted tasks as tooleval's in-process run: the spec (written by task_harness.py) holds the bundled
tasks (each task's messages and merged fixtures), the prompt, and the surface's tools as the model is offered
them (wire names, descriptions, schemas, in the seed's order) with the toolkit tool each runs. One Inspect task:
the samples x ``--epochs`` (tooleval's seeds), ``use_tools`` with one ToolDef per offered tool that runs the
real toolkit tool (tasksets/support_tasks/backend) on the sample's own state (a fresh state from the task's
fixtures per sample, as tooleval opens a session per task; held in a context variable, not in Inspect's store
or the sample's metadata, which Inspect would serialise into its transcript), and ``generate`` looping over
tool calls. The model is Inspect's mockllm with a callable that replies in process as the loopback
server's ``--turns 2`` script does: a call of the first offered tool with ``{}``, then, once a tool result is in the conversation,
the text "Done." (usage given, so mockllm never counts tokens with tiktoken, which would download its
encoding). Prints ``inspect: N samples, T turns in W s wall (C s CPU): X ms per turn``; a warm-up eval of a
few samples runs first, untimed (imports, the log directory).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from contextvars import ContextVar
from pathlib import Path

from inspect_ai import Task, eval as inspect_eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate, solver, system_message, use_tools
from inspect_ai.tool import ToolDef, ToolParams

ROOT = Path(__file__).resolve().parents[2]


def load_toolkit(taskset_dir: Path, reference: str):
    """The toolkit class ('module:Class' in the task set's backend package), imported as a plain package."""
    sys.path[:0] = [str(ROOT), str(taskset_dir)]
    module_name, class_name = reference.split(":", 1)
    return getattr(importlib.import_module(f"backend.{module_name}"), class_name)


def tool_defs(spec: dict, toolkit_class) -> list[ToolDef]:
    backend_tools = toolkit_class.tools()

    def runs(backend_name: str):
        tool = backend_tools[backend_name]

        async def call(**arguments) -> str:  # one coroutine per tool: Inspect registers a tool by its function
            try:
                value = tool.invoke(SAMPLE_TOOLKIT.get(), arguments)
            except Exception as refused:  # a refusal is the tool's answer, as tooleval sends it back
                return f"error: {refused}"
            return json.dumps(value.model_dump(mode="json") if hasattr(value, "model_dump") else value, default=str)
        return call

    def params(schema: dict) -> ToolParams:
        # Inspect insists on a description for every parameter; the toolkit leaves a few self-explanatory.
        properties = {name: {"description": name.replace("_", " "), **value}
                      for name, value in schema.get("properties", {}).items()}
        return ToolParams.model_validate({"type": "object", **schema, "properties": properties})

    return [ToolDef(runs(t["backend"]), name=t["name"], description=t["description"],
                    parameters=params(t["parameters"])) for t in spec["tools"]]


def scripted_model(first_tool: str):
    usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)

    def answer(input, tools, tool_choice, config) -> ModelOutput:  # noqa: A002 (mockllm's signature)
        if any(m.role == "tool" for m in input):
            output = ModelOutput.from_content(model="scripted", content="Done.")
        else:
            output = ModelOutput.for_tool_call(model="scripted", tool_name=first_tool, tool_arguments={})
        output.usage = usage
        return output

    return get_model("mockllm/model", custom_outputs=answer)


@scorer(metrics=[accuracy()])
def replied():
    async def score(state: TaskState, target: Target) -> Score:
        text = state.output.completion if state.output else ""
        return Score(value=CORRECT if text == target.text else INCORRECT, answer=text)

    return score


SAMPLE_TOOLKIT: ContextVar = ContextVar("sample_toolkit")
"""The running sample's toolkit (its own state): kept out of Inspect's store and the sample's metadata, which
Inspect records in its transcript and log, so that neither the state nor the fixtures are serialised."""


def fresh_toolkit(toolkit_class, fixtures: dict[str, dict]):
    @solver
    def open_state():
        async def solve(state: TaskState, generate_) -> TaskState:
            SAMPLE_TOOLKIT.set(toolkit_class(toolkit_class.fresh_state(fixtures[str(state.sample_id)])))
            return state
        return solve

    return open_state()


def run(spec: dict, toolkit_class, tools: list[ToolDef], tasks: list[dict], epochs: int, log_dir: str | None):
    dataset = MemoryDataset([Sample(input=t["messages"], target="Done.", id=t["id"]) for t in tasks])
    fixtures = {t["id"]: t["fixtures"] for t in tasks}
    task = Task(dataset=dataset, solver=[fresh_toolkit(toolkit_class, fixtures), system_message(spec["prompt"]),
                                         use_tools(tools), generate()],
                scorer=replied(), epochs=epochs, name="support-tasks-scripted")
    return inspect_eval(task, model=scripted_model(spec["tools"][0]["name"]), log_dir=log_dir, display="none")[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", type=Path, required=True)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--log-dir", default=None)
    args = parser.parse_args()
    spec = json.loads(args.spec.read_text(encoding="utf-8"))
    toolkit_class = load_toolkit(Path(spec["taskset_dir"]), spec["toolkit"])
    tools = tool_defs(spec, toolkit_class)
    run(spec, toolkit_class, tools, spec["tasks"][:8], 1, args.log_dir)  # warm-up: imports, the log directory
    started, cpu = time.perf_counter(), time.process_time()
    log = run(spec, toolkit_class, tools, spec["tasks"], args.epochs, args.log_dir)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    if log.status != "success" or log.results is None or not log.samples:
        print(f"inspect: run ended {log.status}: {log.error.message if log.error else ''}", file=sys.stderr)
        return 1
    turns = sum(sum(m.role == "assistant" for m in s.messages) for s in log.samples)
    done = sum(s.scores and next(iter(s.scores.values())).value == CORRECT for s in log.samples)
    print(f"inspect: {len(log.samples):,} samples ({done:,} ended 'Done.'), {turns:,} turns in {wall:.2f} s wall "
          f"({cpu:.2f} s CPU): {1000 * wall / turns:.2f} ms per turn ({1000 * cpu / turns:.2f} ms CPU)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
