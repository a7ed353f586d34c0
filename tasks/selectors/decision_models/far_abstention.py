"""Abstention far from the examples: the trained model's 'none' utility rises as a request's nearest labelled
example falls below the model's far cut-off.

A request unlike every example the model learned from has kNN and probe features the model never saw in
training (all low, none telling the tools apart), and a linear utility fitted in the domain need not turn
to 'none' there. So the 'none' utility (before the temperature) gains ``far_slope x (far_cutoff -
nearest)`` when the nearest example's cosine is below ``far_cutoff`` (0 above it): nothing changes for the
95% of in-domain requests above the cut-off, a little for those just below, much for a request far below.

``fit_far_slope`` chooses the slope on the training requests' held-out (cross-fitted) utilities: the
steepest, up to ``MAX_SLOPE``, that costs at most ``FAR_BUDGET`` of held-out accuracy on the answerable
requests (label not 'none') and at most ``FAR_NLL_BUDGET`` of held-out log-loss on all of them, against no
rise. No out-of-domain data is needed: it is the steepest rise the training set's own far requests allow
(those just below the cut-off are often answerable, and a steep rise makes the model sure of a wrong 'none'
there). Both costs only grow with the slope past their least (accuracy falls as 'none' overtakes tools; the
log-loss is convex in the slope), so the steepest slope within them is found by bisection, and it moves
continuously with the utilities: float noise in a training does not jump it from one grid value to another.
"""

from __future__ import annotations

import numpy as np

MAX_SLOPE = 200.0
"""The steepest slope tried, in utility units per unit of cosine below the cut-off (a tool's utility spans a
few units: 0.05 below the cut-off then adds 10)."""
FAR_BUDGET = 0.01
"""The held-out answerable accuracy the rise may cost: one point."""
FAR_NLL_BUDGET = 0.03
"""The held-out log-loss (nats per request, every usable request, before calibration) the rise may cost."""
BISECTIONS = 40


def far_boost(nearest: np.ndarray, cutoff: float | None, slope: float | None) -> np.ndarray:
    """What each request's 'none' utility gains: ``slope x (cutoff - nearest)`` below the cut-off, else 0 (also
    when the model records no cut-off or slope, or the request has no nearest example)."""
    nearest = np.asarray(nearest, dtype=float)
    if cutoff is None or not slope:
        return np.zeros(len(nearest))
    return slope * np.maximum(cutoff - np.nan_to_num(nearest, nan=cutoff), 0.0)


def _log_loss(u: np.ndarray, column: np.ndarray) -> float:
    top = u.max(axis=1, keepdims=True)
    log_z = top[:, 0] + np.log(np.exp(u - top).sum(axis=1))
    return float(np.mean(log_z - u[np.arange(len(u)), column]))


def fit_far_slope(held_out_u: np.ndarray, nearest: np.ndarray, label_column: np.ndarray, rows: np.ndarray,
                  cutoff: float | None) -> float:
    """The steepest slope within both budgets over ``rows`` (the module docstring), at most ``MAX_SLOPE``.
    ``held_out_u``: requests x (tools + 'none') held-out utilities before the temperature (the last column
    'none', -inf where the model cannot abstain: then 0); ``label_column``: the column of each request's
    label. 0 without a cut-off or answerable rows."""
    none_column = held_out_u.shape[1] - 1
    answerable = rows & (label_column != none_column)
    if cutoff is None or not answerable.any() or not np.isfinite(held_out_u[rows, -1]).any():
        return 0.0
    u, column = held_out_u[rows].copy(), label_column[rows]
    learned_none, far = u[:, -1].copy(), nearest[rows]
    kept = answerable[rows]
    right_tool = (u.argmax(axis=1) == column) & kept
    best_tool = u[:, :-1].max(axis=1)
    base_accuracy, base_loss = float(right_tool[kept].mean()), _log_loss(u, column)

    def within(slope: float) -> bool:
        u[:, -1] = learned_none + far_boost(far, cutoff, slope)
        accuracy = float((right_tool & (u[:, -1] <= best_tool))[kept].mean())
        return accuracy >= base_accuracy - FAR_BUDGET and _log_loss(u, column) <= base_loss + FAR_NLL_BUDGET

    if within(MAX_SLOPE):
        return MAX_SLOPE
    low, high = 0.0, MAX_SLOPE
    for _ in range(BISECTIONS):
        middle = (low + high) / 2
        low, high = (middle, high) if within(middle) else (low, middle)
    return low
