"""A table laid out as plain text lines for a given terminal width, without ever cutting a figure.

Figure columns (numbers, percentages, intervals, counts) keep every cell line whole: they never wrap and are
never cropped. To fit the width, text columns (tool names, arm names, readings) wrap first — at spaces, then
after ``_ . / -`` inside long names such as BFCL's ``requests.get_weather_forecast_by_city_name`` — and
headers wrap at spaces. When the figures alone are still too wide, the table is split into panels: each
panel repeats the leading text columns (the row's key) and carries as many figure columns as fit. The
terminal report of every instrument (tasks/report/render.py) uses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GAP = 2
"""Spaces between two columns."""
TEXT_MIN = 10
"""A text column is not wrapped narrower than this (nor than its longest word up to this) unless the key
columns must shrink to leave room for one figure column."""
NAME_FIRST = 16
"""When widening wrapped columns, the first column (the row's name) is widened to this first."""
KEY_MAX = 2
"""At most this many leading text columns are repeated in every panel."""

_BREAK_AFTER = re.compile(r"(?<=[_./\-])")


@dataclass(frozen=True)
class Panel:
    """The columns one panel shows (indexes into the table's columns) and each one's width."""

    columns: list[int]
    widths: dict[int, int]


def cell_lines(cell: str) -> list[str]:
    return str(cell).split("\n") if cell is not None else [""]


def _longest_line(cells: list[str]) -> int:
    return max((len(line) for cell in cells for line in cell_lines(cell)), default=0)


def _chunks(word: str, width: int) -> list[str]:
    """A word longer than ``width`` broken after ``_ . / -`` where it can, else hard at the width."""
    if len(word) <= width:
        return [word]
    parts, out, current = _BREAK_AFTER.split(word), [], ""
    for part in parts:
        while len(part) > width:  # a piece with no break point: hard break
            if current:
                out.append(current)
                current = ""
            out.append(part[:width])
            part = part[width:]
        if len(current) + len(part) <= width:
            current += part
        else:
            out.append(current)
            current = part
    if current:
        out.append(current)
    return out


def wrap_text(text: str, width: int) -> list[str]:
    """Lines of at most ``width`` characters: words kept whole where they fit, long names broken at their
    own separators; explicit newlines kept."""
    width = max(width, 1)
    lines: list[str] = []
    for paragraph in cell_lines(text):
        current = ""
        for word in paragraph.split(" "):
            if not word:
                continue
            candidate = f"{current} {word}" if current else word
            if len(candidate) <= width:
                current = candidate
                continue
            if current:
                lines.append(current)
            pieces = _chunks(word, width)
            lines += pieces[:-1]
            current = pieces[-1]
        lines.append(current)
    return lines or [""]


def _header_word(header: str) -> int:
    """The header's longest piece: headers wrap at spaces and after ``/`` (``worse/`` over ``better``)."""
    return max([len(piece) for word in header.split() for piece in _BREAK_AFTER.split(word)] or [0])


def _figure_width(cells: list[str], header: str) -> int:
    """A figure column is as wide as its widest cell line and its header's longest piece."""
    return max(_longest_line(cells), _header_word(header), 1)


def _text_min(cells: list[str], header: str, natural: int, first: bool) -> int:
    """The row's name (the first column) keeps TEXT_MIN; other text columns wrap down to their longest word."""
    longest_word = max([len(w) for c in cells for line in cell_lines(c) for w in line.split()] or [1])
    floor = max(min(longest_word, TEXT_MIN), _header_word(header)) if first else max(longest_word, _header_word(header))
    return min(natural, floor)


def plan_layout(headers: list[str], rows: list[list[str]], numeric: list[bool], width: int) -> list[Panel]:
    """Panels (usually one) so that every figure column keeps its cells whole within ``width``."""
    n = len(headers)
    columns = [[row[i] if i < len(row) else "" for row in rows] for i in range(n)]
    natural = [max(_longest_line(columns[i]), len(headers[i]), 1) for i in range(n)]
    minimum = [_figure_width(columns[i], headers[i]) if numeric[i] else _text_min(columns[i], headers[i], natural[i], i == 0)
               for i in range(n)]
    everything = list(range(n))
    if _total(everything, minimum) <= width:
        return [Panel(everything, _grow(everything, minimum, natural, width))]

    keys = []
    for i in range(min(KEY_MAX, n - 1)):
        if numeric[i]:
            break
        keys.append(i)
    rest = [i for i in everything if i not in keys]
    widths = list(minimum)
    # the keys shrink (never below 6) until the widest other column fits beside them
    widest = max((widths[i] for i in rest), default=0)
    while keys and _total(keys, widths) + GAP + widest > width and any(widths[k] > 6 for k in keys):
        widths[max(keys, key=lambda k: widths[k])] -= 1
    groups: list[list[int]] = []
    for i in rest:
        if groups and _total(keys + groups[-1] + [i], widths) <= width:
            groups[-1].append(i)
        else:
            groups.append([i])
    return [Panel(keys + group, _grow(keys + group, widths, natural, width)) for group in groups]


def _total(indexes: list[int], widths) -> int:
    return sum(widths[i] for i in indexes) + GAP * (len(indexes) - 1)


def _grow(indexes: list[int], widths: list[int], natural: list[int], width: int) -> dict[int, int]:
    """Widen the columns of ``indexes`` from ``widths`` toward ``natural`` while the total fits."""
    out = {i: widths[i] for i in indexes}
    spare = width - _total(indexes, out)
    first = indexes[0]  # the row's name (a tool, an arm) first, up to NAME_FIRST, then every column in turn
    extra = max(0, min(spare, min(natural[first], NAME_FIRST) - out[first]))
    out[first] += extra
    spare -= extra
    while spare > 0:
        short = [i for i in indexes if out[i] < natural[i]]
        if not short:
            break
        i = min(short, key=lambda i: out[i] / max(natural[i], 1))
        out[i] += 1
        spare -= 1
    return out


def _row_lines(cells: list[str], panel: Panel, numeric: list[bool], header: bool = False) -> list[str]:
    """A row (or, with ``header``, the header: wrapped at spaces and set on the lines next to the rule)."""
    wrapped = []
    widths = panel.widths
    for i in panel.columns:
        cell = cells[i] if i < len(cells) else ""
        lines = cell_lines(cell) if numeric[i] and not header else wrap_text(cell, widths[i])
        wrapped.append(lines)
    height = max(len(lines) for lines in wrapped)
    out = []
    for k in range(height):
        parts = []
        for column, i in enumerate(panel.columns):
            lines = wrapped[column]
            if header:  # headers sit on the last lines, next to the rule
                lines = [""] * (height - len(lines)) + lines
            text = lines[k] if k < len(lines) else ""
            parts.append(text.rjust(widths[i]) if numeric[i] else text.ljust(widths[i]))
        out.append((" " * GAP).join(parts).rstrip())
    return out


def layout_lines(title: str, headers: list[str], rows: list[list[str]], numeric: list[bool], width: int,
                 sections: list[int] | None = None, note: str = "") -> list[tuple[str, str]]:
    """The table as (line, kind) pairs within ``width``; kind is 'title', 'header', 'rule', 'row', 'note' or
    'blank', for a renderer that styles them."""
    sections = set(sections or [])
    panels = plan_layout(headers, rows, numeric, width)
    out: list[tuple[str, str]] = []
    for p, panel in enumerate(panels):
        if p:
            out.append(("", "blank"))
        label = title if len(panels) == 1 else f"{title} ({p + 1} of {len(panels)})"
        out += [(line, "title") for line in wrap_text(label, width)]
        out += [(line, "header") for line in _row_lines(headers, panel, numeric, header=True)]
        out.append(("─" * _total(panel.columns, panel.widths), "rule"))
        for k, row in enumerate(rows):
            if k in sections and k:
                out.append(("", "blank"))
            out += [(line, "row") for line in _row_lines(row, panel, numeric)]
        if note and p == len(panels) - 1:
            out += [(line, "note") for line in wrap_text(note, width)]
    return out
