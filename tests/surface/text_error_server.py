"""A small MCP server written with the official `mcp` SDK that behaves as mcp-server-sqlite does: a SQLite
database behind five tools that carry NO annotations, and a refused statement answered as a plain result
("Database error: no such table: ...") WITHOUT isError.

    python text_error_server.py DB_PATH                 # over stdio
    python text_error_server.py DB_PATH http PORT       # over streamable HTTP on 127.0.0.1:PORT/mcp

The database is the file DB_PATH, so a test reads the server's state from outside it."""

from __future__ import annotations

import sqlite3
import sys

from mcp.server.mcpserver import MCPServer

DB_PATH = sys.argv[1]
server = MCPServer("ledger-sqlite", version="0.1.0", log_level="WARNING")


def _run(query: str, params: tuple = ()) -> list[dict]:
    with sqlite3.connect(DB_PATH) as con:
        con.row_factory = sqlite3.Row
        cursor = con.execute(query, params)
        rows = [dict(r) for r in cursor.fetchall()]
        con.commit()
        return rows


def _answer(query: str, params: tuple = ()) -> str:
    """The rows as text, or the error as text (never raised: no isError), as mcp-server-sqlite answers."""
    try:
        return str(_run(query, params))
    except sqlite3.Error as error:
        return f"Database error: {error}"


@server.tool(description="Run a SELECT query and return its rows.", structured_output=False)
def read_query(query: str) -> str:
    if not query.strip().upper().startswith("SELECT"):
        return "Error: Only SELECT queries are allowed for read_query"
    return _answer(query)


@server.tool(description="Run an INSERT, UPDATE or DELETE query.", structured_output=False)
def write_query(query: str) -> str:
    if query.strip().upper().startswith("SELECT"):
        return "Error: SELECT queries are not allowed for write_query"
    return _answer(query)


@server.tool(description="Create a table with a CREATE TABLE statement.", structured_output=False)
def create_table(query: str) -> str:
    if not query.strip().upper().startswith("CREATE TABLE"):
        return "Error: Only CREATE TABLE statements are allowed"
    answer = _answer(query)
    return answer if answer.startswith("Database error") else f"Table created: {query}"


@server.tool(description="Drop a table.", structured_output=False)
def drop_table(name: str) -> str:
    answer = _answer(f'DROP TABLE "{name}"')
    return answer if answer.startswith("Database error") else f"Table dropped: {name}"


@server.tool(description="List the tables of the database.", structured_output=False)
def list_tables() -> str:
    return _answer("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[3]))
    else:
        server.run()
