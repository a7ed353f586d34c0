"""A small task set over the REAL reference MCP servers (memory and filesystem, installed by `make install`
under tasksets/mcp_office/node_modules), written into a temporary folder for the MCP surface's tests."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import psutil

from tasks.surface.load_tasks import freeze_task_version

ROOT = Path(__file__).resolve().parents[2]
MODULES = ROOT / "tasksets" / "mcp_office" / "node_modules" / "@modelcontextprotocol"
MEMORY_JS = MODULES / "server-memory" / "dist" / "index.js"
FILES_JS = MODULES / "server-filesystem" / "dist" / "index.js"

MEMORY = {"command": "node", "args": [str(MEMORY_JS)], "env": {"MEMORY_FILE_PATH": "{state_dir}/memory.jsonl"}}
FILES = {"command": "node", "args": [str(FILES_JS), "."], "cwd": "{state_dir}/files"}

CRM = [{"type": "entity", "name": "Acme", "entityType": "customer", "observations": ["plan: enterprise"]},
       {"type": "entity", "name": "Globex", "entityType": "customer", "observations": ["plan: starter"]}]

DEFAULT_TASKS = [
    {"id": "o-1", "request": "What plan is Acme on?", "slice": "crm", "intent": "open_nodes",
     "fixtures": {"files": {"memory.jsonl": CRM}}, "assert": {"tool": "open_nodes"}},
    {"id": "o-2", "request": "Read notes/acme.txt", "slice": "files", "intent": "read_text_file",
     "fixtures": {"files": {"files/notes/acme.txt": "Acme renews in March."}},
     "assert": {"probes": [{"probe": {"tool": "read_text_file", "args": {"path": "notes/acme.txt"}},
                            "contains": "March"}]}},
]


def surface_yaml(name: str, servers: dict[str, dict[str, Any]], **extra: Any) -> str:
    body = {"name": name, "mcp": {"servers": servers, "make_dirs": ["files"], **extra}}
    return json.dumps(body)  # JSON is YAML


def write_office(root: Path, tasks: list[dict[str, Any]] | None = None, *, call_timeout_s: float = 20.0,
                 experiment: str | None = None) -> Path:
    """A task-set folder 'office' under ``root``: surfaces 'both' (memory + files), 'memory' (memory alone)
    and 'readonly' (both, without the tools that write), a prompt, tasks, an experiment."""
    folder = root / "office"
    (folder / "surfaces").mkdir(parents=True, exist_ok=True)
    both = {"memory": MEMORY, "files": FILES}
    (folder / "surfaces" / "both.yaml").write_text(surface_yaml("both", both, call_timeout_s=call_timeout_s))
    (folder / "surfaces" / "memory.yaml").write_text(
        surface_yaml("memory", {"memory": MEMORY}, call_timeout_s=call_timeout_s))
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "default.md").write_text("You keep the office's records and files.\n")
    lines = tasks if tasks is not None else DEFAULT_TASKS
    (folder / "t1.jsonl").write_text("".join(json.dumps(t) + "\n" for t in lines))
    freeze_task_version(folder, "t1", sorted({t["slice"] for t in lines}))
    (folder / "experiments").mkdir(exist_ok=True)
    (folder / "experiments" / "run.yaml").write_text(experiment or textwrap.dedent("""\
        name: office-run
        taskset: ..
        version: t1
        seeds: [1, 2, 3]
        batch_size: 2
        defaults: {agent: baseline}
        arms:
          - {name: A, surface: both, prompt: default}
        """))
    return folder


def server_processes(script: Path) -> list[psutil.Process]:
    """This process's children running ``script`` (the servers it started)."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if any(str(script) in part for part in child.cmdline()):
                found.append(child)
        except psutil.Error:
            continue
    return found
