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

A model whose examples had no 'none' label learned no 'none' utility (it is -inf: 'none' is no option), and
nothing would rise. Such a model gets a constant 'none' base for the rise to lift (``fit_base_and_slope``).
The lowest base tried is the utility at which 'none', never a label in its n training requests, has on
average over their held-out utilities the probability the rule of succession gives an outcome never seen in
n trials, 1 / (n + 2) (``fit_none_base``); the highest, the highest base the two budgets allow with no rise.
For each of ``BASE_STEPS`` + 1 bases between them the slope is fitted as above, the two costs counted against
the model without 'none' (the base's own cost included), the log-loss within ``no_none_nll_budget``: with
no request labelled 'none', the held-out log-loss counts only what abstaining costs, never what it earns, so
its budget is tied to the accuracy budget, the log-loss of giving that share of requests up to a uniform
guess among their options (never below a model's that learned 'none'). Kept is the pair under which the
most far held-out requests (below both cut-offs) abstain, the lowest base among equals: a higher base lets a
gentler rise reach requests that are less far, at the cost the budgets allow. No pair with a rise: no base
is kept and the model never abstains, as before.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

MAX_SLOPE = 2000.0
"""The steepest slope tried, in utility units per unit of the product of the two cosine gaps (a tool's
utility spans a few units: 0.05 below the far cut-off and 0.1 below the tool cosine then add 10)."""
FAR_BUDGET = 0.01
"""The held-out answerable accuracy the rise may cost: one point."""
FAR_NLL_BUDGET = 0.02
"""The held-out log-loss (nats per request, every usable request, before calibration) the rise may cost a
model that learned 'none' (one that did not: ``no_none_nll_budget``)."""
BISECTIONS = 40
BASE_STEPS = 20
"""Steps between the lowest and the highest 'none' base tried for a model that learned no 'none'."""


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


def fit_none_base(held_out_u: np.ndarray, rows: np.ndarray) -> float | None:
    """The 'none' base of a model that learned no 'none' (the module docstring): the utility (before the
    temperature) at which the mean held-out probability of 'none' over ``rows`` is 1 / (n + 2), n the rows
    with an offered tool. ``held_out_u``: requests x (tools + 'none'), the last column ignored. None without
    such rows."""
    u = np.asarray(held_out_u, dtype=float)[np.asarray(rows, dtype=bool), :-1]
    top = u.max(axis=1) if u.shape[1] else np.full(len(u), -np.inf)
    u, top = u[np.isfinite(top)], top[np.isfinite(top)]
    if not len(u):
        return None
    log_z = top + np.log(np.exp(u - top[:, None]).sum(axis=1))  # the tools' log-partition per request
    target = 1.0 / (len(u) + 2)

    def mean_none(base: float) -> float:  # P('none') = sigmoid(base - log_z), mean over the requests
        return float(np.mean(0.5 * (1.0 + np.tanh(0.5 * (base - log_z)))))

    low, high = float(log_z.min()) - 50.0, float(log_z.max())
    for _ in range(BISECTIONS + 20):
        middle = (low + high) / 2
        low, high = (middle, high) if mean_none(middle) < target else (low, middle)
    return (low + high) / 2


def no_none_nll_budget(held_out_u: np.ndarray, rows: np.ndarray) -> float:
    """The log-loss budget of a model that learned no 'none' (the module docstring): ``FAR_BUDGET`` times
    the mean over ``rows`` of the log of the options (offered tools and 'none'), at least ``FAR_NLL_BUDGET``."""
    options = np.isfinite(np.asarray(held_out_u, dtype=float)[np.asarray(rows, dtype=bool), :-1]).sum(axis=1) + 1
    uniform = FAR_BUDGET * float(np.mean(np.log(options))) if len(options) else 0.0
    return max(FAR_NLL_BUDGET, uniform)


def _budget(held_out_u: np.ndarray, label_column: np.ndarray, rows: np.ndarray, nll_budget: float = FAR_NLL_BUDGET
            ) -> tuple[Callable[[np.ndarray], bool], np.ndarray]:
    """(within, best tool utility) over ``rows``: ``within(none)`` says whether the 'none' utilities ``none``
    cost at most both budgets against the utilities as given (answerable accuracy, log-loss: ``nll_budget``)."""
    u, column = held_out_u[rows].copy(), label_column[rows]
    kept = column != u.shape[1] - 1
    right_tool = (u.argmax(axis=1) == column) & kept
    best_tool = u[:, :-1].max(axis=1)
    base_accuracy, base_loss = float(right_tool[kept].mean()), _log_loss(u, column)

    def within(none: np.ndarray) -> bool:
        u[:, -1] = none
        accuracy = float((right_tool & (none <= best_tool))[kept].mean())
        return accuracy >= base_accuracy - FAR_BUDGET and _log_loss(u, column) <= base_loss + nll_budget

    return within, best_tool


def fit_far_slope(held_out_u: np.ndarray, nearest: np.ndarray, best_cosine: np.ndarray, label_column: np.ndarray,
                  rows: np.ndarray, cutoff: float | None, tool_cosine: float | None,
                  none_base: float | None = None, nll_budget: float = FAR_NLL_BUDGET) -> float:
    """The steepest slope within both budgets over ``rows`` (the module docstring), at most ``MAX_SLOPE``.
    ``held_out_u``: requests x (tools + 'none') held-out utilities before the temperature (the last column
    'none', -inf where the model cannot abstain: then 0 unless ``none_base`` is given); ``label_column``: the
    column of each request's label; ``best_cosine``: each request's best offered tool's cosine. ``none_base``
    (a model that learned no 'none'): 'none' is that plus the rise, and the costs are counted against the
    model without 'none'; ``nll_budget``: the log-loss budget. 0 without a cut-off or answerable rows."""
    none_column = held_out_u.shape[1] - 1
    answerable = rows & (label_column != none_column)
    if cutoff is None or tool_cosine is None or not answerable.any():
        return 0.0
    learned_none = held_out_u[rows, -1] if none_base is None else np.full(int(rows.sum()), float(none_base))
    if not np.isfinite(learned_none).any():
        return 0.0
    within, _ = _budget(held_out_u, label_column, rows, nll_budget)
    unit = far_boost(nearest[rows], np.asarray(best_cosine)[rows], cutoff, tool_cosine, 1.0)
    if within(learned_none + MAX_SLOPE * unit):
        return MAX_SLOPE
    low, high = 0.0, MAX_SLOPE
    for _ in range(BISECTIONS):
        middle = (low + high) / 2
        low, high = (middle, high) if within(learned_none + middle * unit) else (low, middle)
    return low


def fit_base_and_slope(held_out_u: np.ndarray, nearest: np.ndarray, best_cosine: np.ndarray,
                       label_column: np.ndarray, rows: np.ndarray, cutoff: float | None, tool_cosine: float | None
                       ) -> tuple[float | None, float]:
    """(base, slope) of a model that learned no 'none' (the module docstring; the arguments as
    ``fit_far_slope``'s, the last column of ``held_out_u`` ignored); (None, 0) when no base allows a rise."""
    lowest = fit_none_base(held_out_u, rows)
    if lowest is None or cutoff is None or tool_cosine is None:
        return None, 0.0
    nll_budget = no_none_nll_budget(held_out_u, rows)
    within, best_tool = _budget(held_out_u, label_column, rows, nll_budget)
    unit = far_boost(nearest[rows], np.asarray(best_cosine)[rows], cutoff, tool_cosine, 1.0)
    if not within(np.full(len(unit), lowest)):
        return None, 0.0
    low, high = lowest, max(lowest, float(best_tool[np.isfinite(best_tool)].max()))
    for _ in range(BISECTIONS):  # the highest base within both budgets with no rise
        middle = (low + high) / 2
        low, high = (middle, high) if within(np.full(len(unit), middle)) else (low, middle)
    kept: tuple[float | None, float] = (None, 0.0)
    most = 0
    for base in np.linspace(lowest, low, BASE_STEPS + 1):
        slope = fit_far_slope(held_out_u, nearest, best_cosine, label_column, rows, cutoff, tool_cosine, base,
                              nll_budget)
        abstaining = int(((base + slope * unit > best_tool) & (unit > 0)).sum()) if slope > 0 else 0
        if abstaining > most:
            kept, most = (float(base), slope), abstaining
    return kept
