"""Every repo-relative path the manual or the code's prose names exists: the README, the pages under docs/,
and the docstrings and comments of tasks/, flows/, schemas/ and warehouse/.

A path is text that starts with one of the repository's top folders (``tasks/report/render.py``,
``docs/reference/cli.md``, ``warehouse/views/*.sql``). A placeholder (``tasksets/<name>/backend``,
``{run_id}``) or a ``*`` stands for any name: the path exists when something matches it. A path without a
suffix names a folder or a module (``tasks/stats/wilson``). Data files (``tasksets/shop/v1.jsonl``) are a
user's, made by the commands the text shows, and what a run writes under the default warehouse folder
(``warehouse/tooleval.duckdb``, ``warehouse/rows``) exists once a run has run: neither is checked. Links
between the pages of docs/ are mkdocs's to check (``mkdocs build --strict``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from tests.docs_text import README, pages
from tests.factories import ROOT
from warehouse.location import DEFAULT_DIR, Warehouse

DEFAULT = Warehouse(DEFAULT_DIR)

TOP_FOLDERS = ("tasks", "flows", "schemas", "warehouse", "docs", "tests", "benchmarks", "tasksets", "deployments",
               ".ci")
CODE_FOLDERS = ("tasks", "flows", "schemas", "warehouse")
PATH = re.compile(rf"(?<![\w./<>{{}}*-])((?:{'|'.join(re.escape(t) for t in TOP_FOLDERS)})/"
                  r"(?:[\w.*/-]|<[^<>\n/]*>|\{[^{}\n/]*\})*)")
PLACEHOLDER = re.compile(r"<[^<>/]*>|\{[^{}/]*\}")
CHECKED_SUFFIXES = {"", ".py", ".md", ".sql", ".yaml", ".yml", ".toml", ".svg", ".png", ".lock", ".txt"}
"""Source, docs and configuration: the repository's own files (data files are a user's)."""
WRITTEN_BY_A_RUN = {str(Path(p).relative_to(ROOT)) for p in (
    DEFAULT.db_path, DEFAULT.rows_dir, DEFAULT.reports_dir, DEFAULT.cache_path, DEFAULT.registrations_dir)}
MARKDOWN_LINK = re.compile(r"\]\([^)\s]*\)")


def paths_in(text: str) -> list[str]:
    """The repo-relative paths ``text`` names (a trailing ``.`` or ``/`` of the sentence left off)."""
    found = []
    for match in PATH.finditer(text):
        path = match.group(1).rstrip("./")
        if "/" in path:
            found.append(path)
    return found


def checked(path: str) -> bool:
    return Path(path).suffix in CHECKED_SUFFIXES and path not in WRITTEN_BY_A_RUN


def exists(path: str) -> bool:
    pattern = PLACEHOLDER.sub("*", path)
    candidates = [pattern] if Path(pattern).suffix else [pattern, pattern + ".py"]
    return any(next(iter(ROOT.glob(c)), None) is not None if "*" in c else (ROOT / c).exists() for c in candidates)


def prose_of(source: str) -> str:
    """A Python file's docstrings (every string that stands as a statement) and comments."""
    parts = [node.value.value for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
             and isinstance(node.value.value, str)]
    parts += [token.string for token in tokenize.generate_tokens(io.StringIO(source).readline)
              if token.type == tokenize.COMMENT]
    return "\n".join(parts)


def documents() -> dict[str, str]:
    """Each checked document's repo-relative name and the text whose paths must exist."""
    texts = {str(README.relative_to(ROOT)): README.read_text()}
    texts |= {str(p.relative_to(ROOT)): MARKDOWN_LINK.sub("]", p.read_text()) for p in pages()}
    for folder in CODE_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            texts[str(path.relative_to(ROOT))] = prose_of(path.read_text())
    return texts


def missing_paths() -> list[str]:
    """``document: path`` for every named path that does not exist."""
    return [f"{name}: {path}" for name, text in documents().items() for path in dict.fromkeys(paths_in(text))
            if checked(path) and not exists(path)]


def test_every_path_the_docs_and_the_code_name_exists():
    missing = missing_paths()
    assert not missing, "paths named but not in the repository:\n" + "\n".join(missing)


def test_a_missing_path_is_found_and_a_placeholder_matches_any_name():
    assert paths_in("see tasks/report/render.py. And `warehouse/views/*.sql`, docs/x.md/") == [
        "tasks/report/render.py", "warehouse/views/*.sql", "docs/x.md"]
    assert paths_in("subtasks/a.py, my-docs/b.md and tasks alone") == []
    assert paths_in("`tasksets/<selection set>/catalogues/x.json`") == ["tasksets/<selection set>/catalogues/x.json"]
    assert exists("tasks/report/render.py") and exists("tasks/stats/wilson")
    assert exists("tasksets/<name>/catalogues") and exists("tasksets/{taskset}/catalogues")
    assert not exists("docs/no-such-page.md") and not exists("tasksets/<name>/no-such-folder")
    assert not checked("tasksets/shop/v1.jsonl") and not checked("warehouse/tooleval.duckdb")
    assert checked("tasks/report/render.py") and checked("warehouse/views/*.sql") and checked("tasks/stats")
    assert prose_of('"""tasks/a.py"""\nx = "tasks/b.py"  # tasks/c.py\n').split("\n") == ["tasks/a.py", "# tasks/c.py"]
