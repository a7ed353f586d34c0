"""Create the report views from each instrument's views folder (``tasks/<instrument>/views/*.sql``, file name =
view name; its card's ``views``), and before them the macros they share from ``warehouse/macros.sql``; and
stamp the file with what made them.

The stamp (``definitions_stamp``: a hash of the macros, the views and the tables' sources) is kept in the
file as the macro ``tooleval_definitions()``. A connection that finds the current stamp there knows the
file's tables, macros and views are this tooleval's: a writer skips creating them again, and a read-only
command reads the stored views instead of binding every view again as a temporary one.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from functools import lru_cache
from pathlib import Path

import duckdb

MACROS_FILE = Path(__file__).resolve().parent / "macros.sql"
STAMP_MACRO = "tooleval_definitions"
_SOURCES = (Path(__file__).resolve().parent, Path(__file__).resolve().parents[1] / "schemas")
"""What the file's tables, macros and views are made from, besides the instruments' views and cards: this
package's SQL and Python (the tables' DDL, tables.py) and the pydantic models in schemas/."""


def views_folders() -> list[Path]:
    """Every registered instrument's views folder (tasks/instrument_registry.py)."""
    from tasks.instrument_registry import cards

    return [card.views for card in cards().values() if card.views is not None]


def definitions_stamp() -> str:
    """A hash of every source the warehouse's tables, macros and views are made from (read as text: no
    import): this package, schemas/, and each registered instrument's card and views."""
    from tasks.instrument_registry import INSTRUMENTS

    return _stamp(tuple(INSTRUMENTS.items()))


@lru_cache(maxsize=4)
def _stamp(instruments: tuple[tuple[str, str], ...]) -> str:
    digest = hashlib.sha256()
    for root in _SOURCES:
        for path in _sources_under(root):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    for name, path in _instrument_sources():
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _instrument_sources() -> list[tuple[str, Path]]:
    """Each registered instrument's card module (its store and row models) and view files, by a stable name."""
    from tasks.instrument_registry import INSTRUMENTS, cards

    found = []
    for name, card in cards().items():
        found.append((f"{name}/card.py", Path(sys.modules[f"{INSTRUMENTS[name]}.card"].__file__ or "")))
        if card.views is not None:
            found += [(f"{name}/views/{path.name}", path) for path in sorted(card.views.glob("*.sql"))]
    return found


def _sources_under(root: Path) -> list[Path]:
    """Every .sql and .py file below ``root``, sorted (``os.walk``, not descending into __pycache__: a
    recursive glob would walk it too)."""
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name != "__pycache__"]
        found += [Path(folder) / name for name in names if name.endswith((".sql", ".py"))]
    return sorted(found)


def stamp_found(con: duckdb.DuckDBPyConnection) -> bool:
    """The file was made by this tooleval's definitions (its stamp is the current one)."""
    try:
        found = con.execute(f"SELECT {STAMP_MACRO}()").fetchall()[0][0]
    except duckdb.Error:
        return False
    return found == definitions_stamp()


def write_stamp(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"CREATE OR REPLACE MACRO {STAMP_MACRO}() AS '{definitions_stamp()}'")


def view_files() -> dict[str, Path]:
    """View name -> its file, for every registered instrument's views."""
    return {path.stem: path for path in sorted((path for folder in views_folders() for path in folder.glob("*.sql")),
                                               key=lambda path: path.stem)}


def create_macros(con: duckdb.DuckDBPyConnection, temporary: bool = False) -> None:
    """CREATE OR REPLACE every shared macro: persistent (stored in a DuckDB file like the views), or with
    ``temporary`` as TEMP macros of this connection only (a read-only connection to a file written before
    the macros existed, whose views are re-created as TEMP views)."""
    text = MACROS_FILE.read_text()
    if temporary:
        text = text.replace("CREATE OR REPLACE MACRO", "CREATE OR REPLACE TEMP MACRO")
    con.execute(text)


def views_in_order() -> list[tuple[str, str]]:
    """Every view (name, SQL text), each after the views its text names: the order in which all of them
    can be created in one pass, as one transaction needs (a failed statement ends it)."""
    texts = {name: path.read_text() for name, path in view_files().items()}
    words = {name: set(re.findall(r"\w+", text)) for name, text in texts.items()}  # a view name is one word
    uses = {name: [other for other in texts if other != name and other in words[name]] for name in texts}
    ordered: list[tuple[str, str]] = []
    placed: set[str] = set()

    def place(name: str) -> None:
        if name in placed:
            return
        placed.add(name)
        for other in uses[name]:
            place(other)
        ordered.append((name, texts[name]))

    for name in texts:
        place(name)
    return ordered


def create_views(con: duckdb.DuckDBPyConnection) -> list[str]:
    """CREATE OR REPLACE the shared macros, then every view, each after the views it reads."""
    create_macros(con)
    ordered = views_in_order()
    for name, text in ordered:
        con.execute(f"CREATE OR REPLACE VIEW {name} AS\n{text}")
    return [name for name, _ in ordered]
