"""A small MCP server written with the official `mcp` SDK whose tool list changes after a number of starts, as a
server whose package was upgraded under a pinned catalogue does.

    python drifting_server.py COUNTER_FILE DRIFT_AFTER

Each start adds one to the number in COUNTER_FILE (a file outside any state folder, so it counts every start:
the preflight's, each task's). Starts 1..DRIFT_AFTER list the notes tools as imported: `read_note` (read-only)
and `write_note`; every later start lists the drifted server: `write_note` gone, `archive_note` added, and
`read_note`'s input schema changed (a required `folder`). DRIFT_AFTER 0 drifts from the first start; a
negative one never drifts. The notes are files under the working folder (the task's state folder)."""

from __future__ import annotations

import fcntl
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

COUNTER, DRIFT_AFTER = Path(sys.argv[1]), int(sys.argv[2])


def start_number() -> int:
    """This start's number (1 for the first), counted in COUNTER under a lock (starts may run in parallel)."""
    with open(COUNTER, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        number = int(handle.read().strip() or 0) + 1
        handle.seek(0)
        handle.truncate()
        handle.write(str(number))
    return number


NUMBER = start_number()
DRIFTED = 0 <= DRIFT_AFTER < NUMBER
server = MCPServer("notes", version="2.0.0" if DRIFTED else "1.0.0", log_level="WARNING")
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False)

if DRIFTED:
    @server.tool(description="Read a note by its name.", annotations=READ_ONLY, structured_output=False)
    def read_note(name: str, folder: str) -> str:
        path = Path(folder) / name
        return path.read_text() if path.is_file() else f"no note {name}"

    @server.tool(description="Archive a note.", structured_output=False)
    def archive_note(name: str) -> str:
        return f"archived {name}"
else:
    @server.tool(description="Read a note by its name.", annotations=READ_ONLY, structured_output=False)
    def read_note(name: str) -> str:
        path = Path(name)
        return path.read_text() if path.is_file() else f"no note {name}"

    @server.tool(description="Write a note.", structured_output=False)
    def write_note(name: str, text: str) -> str:
        Path(name).write_text(text)
        return f"wrote {name}"


if __name__ == "__main__":
    server.run()
