"""The documentation as tests read it: README.md (the front door) and the pages under docs/ (the manual).

Tests that check the docs say what the code does read the page the text lives on through here, so a page
that moves is changed in one place.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from tests.factories import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
GENERATED = {DOCS / "reference" / "cli.md", DOCS / "reference" / "warehouse.md"}
"""Pages written by code (flows/cli_doc.py, warehouse/schema_doc.py), not by hand."""


def pages() -> list[Path]:
    """Every markdown page of the site, in a stable order."""
    return sorted(DOCS.rglob("*.md"))


def page(relative: str) -> str:
    """One page's text, e.g. ``page("reference/warehouse.md")``."""
    return (DOCS / relative).read_text()


@cache
def docs_text(*, generated: bool = True) -> str:
    """Every page's text, one after another (``generated=False``: only the pages written by hand)."""
    return "\n".join(p.read_text() for p in pages() if generated or p not in GENERATED)


FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def relative_links(text: str) -> list[str]:
    """The targets of the markdown links and images of `text` that are not URLs (code left out)."""
    prose = CODE_SPAN.sub("", FENCE.sub("", text))
    return [t for t in LINK.findall(prose) if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


def anchors(text: str) -> set[str]:
    """The ids of a page's headings, as mkdocs (Python-Markdown's toc) and GitHub make them for these headings."""
    from markdown.extensions.toc import slugify

    prose = FENCE.sub("", text)
    return {slugify(re.sub(r"[`*]", "", h), "-") for h in re.findall(r"^#{1,6} (.+?)\s*#*$", prose, re.M)}
