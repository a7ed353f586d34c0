"""Abstention far from the examples: the trained model's 'none' utility rises on a request that is both far
from its labelled examples and unlike every offered tool.

A request unlike every example the model learned from has kNN and probe features the model never saw in
training (all low, none telling the tools apart), and a linear utility fitted in the domain need not turn
to 'none' there. Nor should it always: a request of another domain may still fit an offered tool (its
cosine to the tool is high), and then the tool is the answer. So the 'none' utility (before the
temperature) gains

    far_slope x max(0, far_cutoff - nearest example's cosine) x max(0, far_tool_cosine - best tool's cosine)

``far_cutoff`` is the model's far cut-off (5% of its held-out training requests are below it),
``far_tool_cosine`` the median best-tool cosine of its answerable training requests: nothing changes for a
request near the examples or with a tool as similar as a typical answerable request's; the farther it is on
both, the more it abstains.

``fit_far_slope`` chooses the slope on the training requests' held-out (cross-fitted) utilities: the
steepest, up to ``MAX_SLOPE``, that costs at most ``FAR_BUDGET`` of held-out accuracy on the answerable
requests (label not 'none') and at most ``FAR_NLL_BUDGET`` of held-out log-loss on all of them, against no
rise. No out-of-domain data is needed: it is the steepest rise the training set's own far requests allow.
Both costs only grow with the slope past their least (accuracy falls as 'none' overtakes tools; the
log-loss is convex in the slope), so the steepest slope within them is found by bisection, and it moves
continuously with the utilities: float noise in a training does not jump it from one grid value to another.
"""

from __future__ import annotations

import numpy as np

MAX_SLOPE = 2000.0
"""The steepest slope tried, in utility units per unit of the product of the two cosine gaps (a tool's
utility spans a few units: 0.05 below the far cut-off and 0.1 below the tool cosine then add 10)."""
FAR_BUDGET = 0.01
"""The held-out answerable accuracy the rise may cost: one point."""
FAR_NLL_BUDGET = 0.02
"""The held-out log-loss (nats per request, every usable request, before calibration) the rise may cost."""
BISECTIONS = 40


def far_boost(nearest: np.ndarray, best_cosine: np.ndarray, cutoff: float | None, tool_cosine: float | None,
              slope: float | None) -> np.ndarray:
    """What each request's 'none' utility gains (the module docstring); 0 when the model records no cut-off,
    tool cosine or slope, and for a request without a nearest example."""
    nearest = np.asarray(nearest, dtype=float)
    if cutoff is None or tool_cosine is None or not slope:
        return np.zeros(len(nearest))
    far = np.maximum(cutoff - np.nan_to_num(nearest, nan=cutoff), 0.0)
    return slope * far * np.maximum(tool_cosine - np.asarray(best_cosine, dtype=float), 0.0)


def typical_tool_cosine(best_cosine: np.ndarray, answerable: np.ndarray) -> float | None:
    """``far_tool_cosine``: the median best-tool cosine of the answerable requests (None without any)."""
    values = np.asarray(best_cosine, dtype=float)[answerable]
    return float(np.median(values)) if len(values) else None


def _log_loss(u: np.ndarray, column: np.ndarray) -> float:
    top = u.max(axis=1, keepdims=True)
    log_z = top[:, 0] + np.log(np.exp(u - top).sum(axis=1))
    return float(np.mean(log_z - u[np.arange(len(u)), column]))


def fit_far_slope(held_out_u: np.ndarray, nearest: np.ndarray, best_cosine: np.ndarray, label_column: np.ndarray,
                  rows: np.ndarray, cutoff: float | None, tool_cosine: float | None) -> float:
    """The steepest slope within both budgets over ``rows`` (the module docstring), at most ``MAX_SLOPE``.
    ``held_out_u``: requests x (tools + 'none') held-out utilities before the temperature (the last column
    'none', -inf where the model cannot abstain: then 0); ``label_column``: the column of each request's
    label; ``best_cosine``: each request's best offered tool's cosine. 0 without a cut-off or answerable rows."""
    none_column = held_out_u.shape[1] - 1
    answerable = rows & (label_column != none_column)
    if cutoff is None or tool_cosine is None or not answerable.any() or not np.isfinite(held_out_u[rows, -1]).any():
        return 0.0
    u, column = held_out_u[rows].copy(), label_column[rows]
    learned_none, far, best = u[:, -1].copy(), nearest[rows], np.asarray(best_cosine)[rows]
    kept = answerable[rows]
    right_tool = (u.argmax(axis=1) == column) & kept
    best_tool = u[:, :-1].max(axis=1)
    base_accuracy, base_loss = float(right_tool[kept].mean()), _log_loss(u, column)

    def within(slope: float) -> bool:
        u[:, -1] = learned_none + far_boost(far, best, cutoff, tool_cosine, slope)
        accuracy = float((right_tool & (u[:, -1] <= best_tool))[kept].mean())
        return accuracy >= base_accuracy - FAR_BUDGET and _log_loss(u, column) <= base_loss + FAR_NLL_BUDGET

    if within(MAX_SLOPE):
        return MAX_SLOPE
    low, high = 0.0, MAX_SLOPE
    for _ in range(BISECTIONS):
        middle = (low + high) / 2
        low, high = (middle, high) if within(middle) else (low, middle)
    return low
