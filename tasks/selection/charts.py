"""Inline SVG charts for the HTML report: no script, no external asset, readable in print and without colour.

Each series has its own colour (Okabe-Ito, safe for colour-blind readers) and its own marker shape, and
every mark carries a <title> with its figures (shown as a tooltip by browsers).
"""

from __future__ import annotations

import math
from html import escape

from tasks.selection.figures import RunFigures
from tasks.report.format import pct, span

COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
SHAPES = ["circle", "square", "triangle", "diamond"]
FONT = "font-family='system-ui,sans-serif' font-size='11'"


def _marker(shape: str, x: float, y: float, colour: str, size: float = 4.0, title: str = "") -> str:
    tip = f"<title>{escape(title)}</title>" if title else ""
    if shape == "square":
        body = f"<rect x='{x - size:.1f}' y='{y - size:.1f}' width='{2 * size:.1f}' height='{2 * size:.1f}'"
    elif shape == "triangle":
        points = f"{x:.1f},{y - size - 1:.1f} {x - size - 1:.1f},{y + size:.1f} {x + size + 1:.1f},{y + size:.1f}"
        body = f"<polygon points='{points}'"
    elif shape == "diamond":
        s = size + 1
        body = f"<polygon points='{x:.1f},{y - s:.1f} {x + s:.1f},{y:.1f} {x:.1f},{y + s:.1f} {x - s:.1f},{y:.1f}'"
    else:
        body = f"<circle cx='{x:.1f}' cy='{y:.1f}' r='{size:.1f}'"
    return f"{body} fill='{colour}' stroke='white' stroke-width='0.8'>{tip}</{body.split()[0][1:]}>"


def _style(i: int) -> tuple[str, str]:
    return COLOURS[i % len(COLOURS)], SHAPES[i % len(SHAPES)]


def _legend(labels: list[str], x: float, y: float) -> str:
    parts, cursor = [], x
    for i, label in enumerate(labels):
        colour, shape = _style(i)
        parts.append(_marker(shape, cursor + 5, y, colour))
        parts.append(f"<text x='{cursor + 14:.1f}' y='{y + 4:.1f}' {FONT}>{escape(label)}</text>")
        cursor += 24 + 6.5 * len(label)
    return "".join(parts)


def _svg(width: float, height: float, body: str, label: str) -> str:
    return (f"<svg role='img' aria-label='{escape(label)}' "
            f"width='{width:.0f}' height='{height:.0f}' viewBox='0 0 {width:.0f} {height:.0f}'>{body}</svg>")


def ladder_chart(figures: RunFigures) -> str:
    """Accuracy of each slice across the rungs, with 95% interval whiskers."""
    arms = figures.arm_order
    slices = sorted({x.slice for x in figures.slices})
    width, height, left, top, bottom = 660, 300, 50, 34, 60
    plot_w, plot_h = width - left - 20, height - top - bottom
    step = plot_w / max(1, len(arms))
    xs = {arm: left + step * (i + 0.5) for i, arm in enumerate(arms)}

    def y(v: float) -> float:
        return top + plot_h * (1 - v)

    parts = [_legend(slices, left, 14)]
    for tick in range(0, 101, 20):
        parts.append(f"<line x1='{left}' x2='{left + plot_w}' y1='{y(tick / 100):.1f}' y2='{y(tick / 100):.1f}' "
                     f"stroke='#ddd'/><text x='{left - 6}' y='{y(tick / 100) + 4:.1f}' text-anchor='end' {FONT}>"
                     f"{tick}%</text>")
    for arm in arms:
        parts.append(f"<text x='{xs[arm]:.1f}' y='{height - bottom + 18}' text-anchor='middle' {FONT}>"
                     f"{figures.rung_of(arm)}. {escape(arm)}</text>")
    for i, slice_ in enumerate(slices):
        colour, shape = _style(i)
        levels = sorted((x for x in figures.slices if x.slice == slice_), key=lambda x: x.rung)
        offset = (i - (len(slices) - 1) / 2) * 8
        line = " ".join(f"{xs[x.arm] + offset:.1f},{y(x.accuracy):.1f}" for x in levels)
        parts.append(f"<polyline points='{line}' fill='none' stroke='{colour}' stroke-width='1.5'/>")
        for x in levels:
            cx = xs[x.arm] + offset
            parts.append(f"<line x1='{cx:.1f}' x2='{cx:.1f}' y1='{y(x.ci_low):.1f}' y2='{y(x.ci_high):.1f}' "
                         f"stroke='{colour}' stroke-width='1.5'/>")
            parts.append(_marker(shape, cx, y(x.accuracy), colour,
                                 title=f"{slice_}, {x.arm}: {pct(x.accuracy)} ({x.correct}/{x.n}), "
                                       f"95% CI {span(x.ci_low, x.ci_high)}"))
    return _svg(width, height, "".join(parts), "accuracy by slice across rungs")


def tool_whisker_chart(figures: RunFigures, slice_: str) -> str:
    """Per-tool accuracy with 95% interval whiskers, one marker per rung."""
    arms = figures.arm_order
    tools = sorted({x.tool for x in figures.tools if x.slice == slice_})
    row_h = max(14, 6 * len(arms) + 6)
    left, top, width = 200, 40, 720
    plot_w = width - left - 20
    height = top + row_h * len(tools) + 30

    def x(v: float) -> float:
        return left + plot_w * v

    parts = [_legend([f"{figures.rung_of(a)}. {a}" for a in arms], left, 14)]
    for tick in range(0, 101, 20):
        parts.append(f"<line x1='{x(tick / 100):.1f}' x2='{x(tick / 100):.1f}' y1='{top - 4}' "
                     f"y2='{height - 26}' stroke='#ddd'/><text x='{x(tick / 100):.1f}' y='{height - 12}' "
                     f"text-anchor='middle' {FONT}>{tick}%</text>")
    levels = {(t.tool, t.arm): t for t in figures.tools if t.slice == slice_}
    for row, tool in enumerate(tools):
        y0 = top + row * row_h
        if row % 2:
            parts.append(f"<rect x='0' y='{y0}' width='{width}' height='{row_h}' fill='#f6f6f6'/>")
        weight = figures.weights.get(tool)
        label = tool + (f" ({pct(weight)})" if weight is not None else "")
        parts.append(f"<text x='{left - 8}' y='{y0 + row_h / 2 + 4:.1f}' text-anchor='end' {FONT}>"
                     f"{escape(label)}</text>")
        for i, arm in enumerate(arms):
            t = levels.get((tool, arm))
            if t is None:
                continue
            colour, shape = _style(i)
            cy = y0 + 6 + i * 6
            parts.append(f"<line x1='{x(t.ci_low):.1f}' x2='{x(t.ci_high):.1f}' y1='{cy:.1f}' y2='{cy:.1f}' "
                         f"stroke='{colour}' stroke-width='1.5'/>")
            parts.append(_marker(shape, x(t.accuracy), cy, colour, 3.2,
                                 f"{tool}, {arm}: {pct(t.accuracy)} ({t.correct}/{t.n}), 95% CI "
                                 f"{span(t.ci_low, t.ci_high)}"))
    return _svg(width, height, "".join(parts), f"per-tool accuracy, slice {slice_}")


def confusion_heatmap(figures: RunFigures, arm: str) -> str:
    """Rows: expected tool; columns: the answer; shade: share of the row's rows; diagonal outlined."""
    cells = [c for c in figures.confusion if c["arm"] == arm]
    expected = sorted({c["expected"] for c in cells})
    answers = expected + sorted({c["answer"] for c in cells} - set(expected))
    size, left, top = 13, 190, 170
    width, height = left + size * len(answers) + 140, top + size * len(expected) + 20
    col = {a: i for i, a in enumerate(answers)}
    row = {e: i for i, e in enumerate(expected)}
    parts = []
    for a, i in col.items():
        cx = left + i * size + size / 2
        parts.append(f"<text transform='translate({cx + 4:.1f},{top - 6}) rotate(-60)' {FONT}>{escape(a)}</text>")
    for e, j in row.items():
        parts.append(f"<text x='{left - 6}' y='{top + j * size + size - 3}' text-anchor='end' {FONT}>{escape(e)}</text>")
        parts.append(f"<rect x='{left}' y='{top + j * size}' width='{size * len(answers)}' height='{size}' "
                     f"fill='none' stroke='#eee'/>")
    for c in cells:
        share = float(c["share_of_expected"])
        diagonal = c["answer"] == c["expected"]
        # correct cells in blue, confusions in orange-red; darker = larger share of the row
        base = (0, 114, 178) if diagonal else (213, 94, 0)
        shade = tuple(round(255 - (255 - b) * min(1.0, 0.15 + 0.85 * share)) for b in base)
        parts.append(
            f"<rect x='{left + col[c['answer']] * size}' y='{top + row[c['expected']] * size}' width='{size}' "
            f"height='{size}' fill='rgb{shade}' stroke='{'#000' if diagonal else 'white'}' stroke-width='0.6'>"
            f"<title>{escape(c['expected'])} → {escape(c['answer'])}: {c['n']} rows ({pct(share)} of the row)"
            f"</title></rect>")
    return _svg(width, height, "".join(parts), f"confusion heatmap, {arm}")


def reliability_chart(figures: RunFigures) -> str:
    """Reliability diagram per arm: accuracy against mean confidence in ten bins; the diagonal is perfect."""
    panel, gap, pad = 200, 30, 34
    cals = figures.calibration
    width = pad + len(cals) * (panel + gap)
    height = panel + 70
    parts = []
    for k, cal in enumerate(cals):
        ox, oy = pad + k * (panel + gap), 24
        colour, shape = _style(k)
        parts.append(f"<text x='{ox}' y='14' {FONT} font-weight='600'>{escape(f'{cal.rung}. {cal.arm}')}"
                     f" · ECE {cal.ece:.3f}</text>")
        parts.append(f"<rect x='{ox}' y='{oy}' width='{panel}' height='{panel}' fill='none' stroke='#999'/>")
        parts.append(f"<line x1='{ox}' y1='{oy + panel}' x2='{ox + panel}' y2='{oy}' stroke='#999' "
                     f"stroke-dasharray='4 3'/>")
        for tick in (0, 0.5, 1):
            parts.append(f"<text x='{ox + tick * panel:.1f}' y='{oy + panel + 14}' text-anchor='middle' {FONT}>"
                         f"{tick:g}</text>")
            parts.append(f"<text x='{ox - 4}' y='{oy + (1 - tick) * panel + 4:.1f}' text-anchor='end' {FONT}>"
                         f"{tick:g}</text>")
        points = [(b["mean_confidence"], b["accuracy"], b["n"], b) for b in cal.bins if b["n"]]
        if points:
            line = " ".join(f"{ox + c * panel:.1f},{oy + (1 - a) * panel:.1f}" for c, a, _, _ in points)
            parts.append(f"<polyline points='{line}' fill='none' stroke='{colour}' stroke-width='1.5'/>")
        total = sum(n for _, _, n, _ in points) or 1
        for c, a, n, b in points:
            r = 2.5 + 6 * math.sqrt(n / total)
            parts.append(_marker(shape, ox + c * panel, oy + (1 - a) * panel, colour, r,
                                 f"confidence {b['bin_low']:.1f}–{b['bin_high']:.1f}: {n} rows, mean confidence "
                                 f"{b['mean_confidence']:.2f}, accuracy {pct(b['accuracy'])}"))
        parts.append(f"<text x='{ox + panel / 2}' y='{oy + panel + 30}' text-anchor='middle' {FONT}>"
                     "x: mean confidence · y: accuracy</text>")
    return _svg(width, height, "".join(parts), "reliability diagram")
