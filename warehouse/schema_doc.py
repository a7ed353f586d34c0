"""The warehouse schema as markdown, generated from the models, the view headers and the views' columns (as
DuckDB describes them in an empty in-memory warehouse).

`python -m warehouse.schema_doc` prints it; `python -m warehouse.schema_doc --write` puts it in the documentation
page docs/reference/warehouse.md between the markers (a test keeps the two equal).
"""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb

from schemas.arrow import arrow_schema, duckdb_type
from warehouse.tables import create_tables, tables
from warehouse.views import create_views, view_files

BEGIN, END = "<!-- schema:begin -->", "<!-- schema:end -->"
PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "warehouse.md"
REGENERATE = "python -m warehouse.schema_doc --write docs/reference/warehouse.md"


def view_header(text: str) -> str:
    lines = []
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        lines.append(line[2:].strip())
    return " ".join(lines)


def view_columns() -> dict[str, list[tuple[str, str]]]:
    """Each view's columns and DuckDB types, from an empty in-memory warehouse."""
    con = duckdb.connect()
    try:
        create_tables(con)
        create_views(con)
        return {name: [(c, t) for c, t, *_ in con.execute(f'describe select * from "{name}"').fetchall()]
                for name in view_files()}
    finally:
        con.close()


def schema_markdown() -> str:
    out = [BEGIN, "", "Views (query these):", ""]
    columns = view_columns()
    for name, path in view_files().items():
        header = view_header(path.read_text())
        out.append(f"- `{name}` — {header.split(':', 1)[1].strip() if ':' in header else header}")
        out.append("  Columns: " + ", ".join(f"`{c}` {t.lower()}" for c, t in columns[name]) + ".")
    out += ["", "Tables (each derived from a pydantic model under `schemas/`):", ""]
    for table, model in tables().items():
        out += [f"**`{table}`** — {model.__doc__.strip().splitlines()[0]}", "",
                "| column | type | meaning |", "|---|---|---|"]
        for field in arrow_schema(model):
            meaning = model.model_fields[field.name].description or ""
            null = "" if field.nullable else " not null"
            out.append(f"| `{field.name}` | {duckdb_type(field.type)}{null} | {meaning.replace('|', '/')} |")
        out.append("")
    out.append(END)
    return "\n".join(out)


def write_into(page: Path = PAGE) -> None:
    """Replace the text between the markers in `page` with the current schema."""
    text = page.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    page.write_text(text[:start] + schema_markdown() + text[end:])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"]:
        write_into(Path(sys.argv[2]) if len(sys.argv) > 2 else PAGE)
    else:
        print(schema_markdown())
