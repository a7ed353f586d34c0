"""The terminal the reports print to: its width, and lines in bold, dim, red, green or yellow (ANSI codes)
when stdout is a terminal that wants colour.

What the reports need of a terminal and no more, so a read-only command imports no styling library.
Colour only repeats what the words say (PASS / FAIL, ▲ / ▼), so a pipe, a file, ``NO_COLOR`` or
``TERM=dumb`` gets the same text without codes; ``FORCE_COLOR`` asks for codes on a pipe.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

TERMINAL_WIDTH = 100
"""Width of the terminal report when stdout is not a terminal and COLUMNS is not set."""
MIN_WIDTH = 60
"""Narrower widths are rendered at this width (figures stay whole; lines may exceed the terminal)."""
SGR = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33"}
"""The styles the reports use, as ANSI select-graphic-rendition codes."""


def terminal_width() -> int:
    """COLUMNS when set (whether or not stdout is a terminal), else the terminal's width, else 100."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return max(int(columns), MIN_WIDTH)
    if sys.stdout.isatty():
        try:
            return max(os.get_terminal_size(sys.stdout.fileno()).columns, MIN_WIDTH)
        except OSError:
            pass
    return TERMINAL_WIDTH


def colour_wanted(file: TextIO) -> bool:
    """Codes for a terminal; none when ``NO_COLOR`` is set or ``TERM`` is dumb; ``FORCE_COLOR`` forces them."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(file, "isatty", None)
    return bool(isatty and isatty())


def _codes(styles: list[str]) -> str:
    return ";".join(SGR[word] for style in styles for word in style.split() if word in SGR)


def styled(line: str, style: str = "", spans: list[tuple[int, int, str]] | None = None) -> str:
    """``line`` with ANSI codes: ``style`` on all of it, each span's style on ``line[start:end]`` as well."""
    spans = [span for span in spans or [] if span[0] < span[1]]
    if not spans:
        codes = _codes([style])
        return f"\x1b[{codes}m{line}\x1b[0m" if codes and line else line
    cuts = sorted({0, len(line), *(max(0, min(s, len(line))) for s, _, _ in spans),
                   *(max(0, min(e, len(line))) for _, e, _ in spans)})
    out = []
    for start, end in zip(cuts, cuts[1:]):
        codes = _codes([style] + [st for s, e, st in spans if s <= start and end <= e])
        out.append(f"\x1b[{codes}m{line[start:end]}\x1b[0m" if codes else line[start:end])
    return "".join(out)


def word_spans(line: str, words: dict[str, str]) -> list[tuple[int, int, str]]:
    """A span for every occurrence of each word, with that word's style."""
    spans = []
    for word, style in words.items():
        start = line.find(word)
        while start >= 0:
            spans.append((start, start + len(word), style))
            start = line.find(word, start + len(word))
    return spans


class Terminal:
    """Where report lines go: ``file`` (stdout), ``width`` columns (``terminal_width()``), and colour when
    ``colour`` is True (default: ``colour_wanted(file)``)."""

    def __init__(self, file: TextIO | None = None, width: int | None = None, colour: bool | None = None):
        self.file = file if file is not None else sys.stdout
        self.width = width or terminal_width()
        self.colour = colour_wanted(self.file) if colour is None else colour

    def print(self, line: str = "", style: str = "", spans: list[tuple[int, int, str]] | None = None) -> None:
        """One line as it is (no wrapping, no markup), styled when this terminal shows colour."""
        self.file.write((styled(line, style, spans) if self.colour else line) + "\n")
