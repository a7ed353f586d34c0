"""A conditional logit over each request's options (its offered tools, and 'none'), fitted with L-BFGS;
temperature scaling of its utilities on held-out predictions; and a top-label calibration of the chosen
option's probability on held-out predictions (``fit_top_label`` / ``top_label``).

The utility of tool j for request i is ``tool_x[i, j] . w_tool``, that of 'none' is ``none_x[i] . w_none``;
P(option) is the softmax of the utilities over the request's options (padding masked out). One weight
vector is shared by every tool, so the model scores tools it never saw in training.
"""

from __future__ import annotations

import numpy as np

from tasks.selectors.decision_models.blas_threads import one_blas_thread

NONE_INDEX = -1
"""The label index of 'none' (tools are 0..width-1)."""


def utilities(tool_x: np.ndarray, mask: np.ndarray, none_x: np.ndarray, w_tool: np.ndarray,
              w_none: np.ndarray | None) -> np.ndarray:
    """requests x (width + 1): tool utilities (-inf on padding), then 'none' (-inf when it is no option)."""
    u_tool = np.where(mask, tool_x @ w_tool, -np.inf)
    u_none = none_x @ w_none if w_none is not None else np.full(len(none_x), -np.inf)
    return np.concatenate([u_tool, u_none[:, None]], axis=1)


def softmax(u: np.ndarray) -> np.ndarray:
    top = np.max(u, axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(u - top)
    total = e.sum(axis=1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _targets(labels: np.ndarray, width: int) -> np.ndarray:
    y = np.zeros((len(labels), width + 1))
    y[np.arange(len(labels)), np.where(labels == NONE_INDEX, width, labels)] = 1.0
    return y


@one_blas_thread
def fit_logit(tool_x: np.ndarray, mask: np.ndarray, none_x: np.ndarray, labels: np.ndarray, with_none: bool,
              l2: float = 1e-3, row_weights: np.ndarray | None = None,
              fixed: tuple[np.ndarray, np.ndarray | None, np.ndarray] | None = None
              ) -> tuple[np.ndarray, np.ndarray | None]:
    """(w_tool, w_none or None): the weights with the least mean negative log-likelihood plus ``l2`` |w|^2.
    ``labels`` holds the index of the right tool per request, or NONE_INDEX. ``row_weights`` (default 1 each)
    weigh the rows' log-likelihoods: the mean is sum(weight * nll) / sum(weight). ``fixed`` = (w_tool,
    w_none, free): start from these weights and fit only the entries where ``free`` (over w_tool then
    w_none) is true, the others held."""
    n, width, d = tool_x.shape
    e = none_x.shape[1] if with_none else 0
    column = np.where(labels == NONE_INDEX, width, labels)
    y = _targets(labels, width)
    share = np.full(n, 1.0 / n) if row_weights is None else np.asarray(row_weights, dtype=float) / np.sum(row_weights)
    pairs = tool_x.reshape(n * width, d)  # one row per (request, tool): the products below are one BLAS call
    rows, hidden = np.arange(n), ~mask
    u = np.empty((n, width + 1))  # the utilities, written in place at each step
    if not with_none:
        u[:, -1] = -np.inf

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        np.copyto(u[:, :-1], (pairs @ theta[:d]).reshape(n, width))
        u[:, :-1][hidden] = -np.inf
        if with_none:
            u[:, -1] = none_x @ theta[d:]
        top = np.max(u, axis=1, keepdims=True)
        log_z = top[:, 0] + np.log(np.exp(u - top).sum(axis=1))
        p = np.exp(u - log_z[:, None])
        value = float(share @ (log_z - u[rows, column]) + l2 * theta @ theta)
        diff = (p - y) * share[:, None]
        grad = np.empty_like(theta)
        grad[:d] = diff[:, :width].reshape(-1) @ pairs
        if with_none:
            grad[d:] = diff[:, width] @ none_x
        return value, grad + 2 * l2 * theta

    from scipy.optimize import minimize  # training only: scoring with a trained model never loads scipy.optimize

    theta0 = np.zeros(d + e)
    theta0[0] = 1.0  # start from "more similar is better"
    bounds = None
    if fixed is not None:
        theta0 = np.concatenate([fixed[0], fixed[1] if with_none else []]).astype(float)
        free = np.asarray(fixed[2], dtype=bool)[: d + e]
        bounds = [(None, None) if f else (v, v) for f, v in zip(free, theta0)]
    result = minimize(loss, theta0, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": 500})
    theta = result.x
    return theta[:d], (theta[d:] if with_none else None)


def fit_temperature(u: np.ndarray, labels: np.ndarray) -> float:
    """The temperature T with the least negative log-likelihood of softmax(u / T) on held-out utilities."""
    width = u.shape[1] - 1
    column = np.where(labels == NONE_INDEX, width, labels)
    rows = np.arange(len(labels))

    def nll(log_t: float) -> float:
        v = u / np.exp(log_t)
        top = np.max(v, axis=1, keepdims=True)
        log_z = top[:, 0] + np.log(np.exp(v - top).sum(axis=1))
        return float(np.mean(log_z - v[rows, column]))

    if len(labels) == 0:
        return 1.0
    from scipy.optimize import minimize_scalar

    return float(np.exp(minimize_scalar(nll, bounds=(-3.0, 3.0), method="bounded").x))


MIN_TOP_LABEL_ROWS = 200
"""Fewer held-out requests than this: no top-label calibration (slope 1, shift 0)."""
TOP_LABEL_ALPHA = 0.01
"""The top-label calibration is kept only when the held-out predictions reject the identity at this level
(likelihood-ratio test, 2 degrees of freedom): on a small set its two fitted numbers add noise, not
calibration (the support set's 540 requests: ECE 0.046 -> 0.051 when always kept)."""


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return np.log(p) - np.log1p(-p)


def fit_top_label(confidence: np.ndarray, right: np.ndarray) -> tuple[float, float]:
    """(slope, shift) of P(right) = sigmoid(slope * logit(confidence) + shift), fitted by maximum likelihood
    (Newton's method) on held-out chosen options: a temperature rescales every option alike, so it cannot
    raise the low confidences and lower the high ones at once, which a model of many tools may need (the
    MetaTool sample's model is one: docs/measured/decision-models.md). Identity (1, 0) on fewer than
    ``MIN_TOP_LABEL_ROWS`` requests, on a single outcome, if the fit does not settle, or if it is no
    better than the identity beyond chance (``TOP_LABEL_ALPHA``)."""
    right = np.asarray(right, dtype=float)
    if len(right) < MIN_TOP_LABEL_ROWS or right.min() == right.max():
        return 1.0, 0.0
    x = np.column_stack([_logit(np.asarray(confidence, dtype=float)), np.ones(len(right))])
    theta = np.array([1.0, 0.0])
    for _ in range(50):
        q = 1.0 / (1.0 + np.exp(-(x @ theta)))
        gradient = x.T @ (q - right)
        hessian = (x * (q * (1 - q))[:, None]).T @ x + 1e-9 * np.eye(2)
        step = np.linalg.solve(hessian, gradient)
        theta = theta - step
        if np.max(np.abs(step)) < 1e-10:
            break
    if not np.all(np.isfinite(theta)) or theta[0] <= 0:
        return 1.0, 0.0

    def log_likelihood(t: np.ndarray) -> float:
        z = x @ t
        return float(np.sum(right * z - np.logaddexp(0.0, z)))

    ratio = 2.0 * (log_likelihood(theta) - log_likelihood(np.array([1.0, 0.0])))
    if ratio < -2.0 * np.log(TOP_LABEL_ALPHA):  # chi-square, 2 degrees of freedom: P(> r) = exp(-r / 2)
        return 1.0, 0.0
    return float(theta[0]), float(theta[1])


def top_label(p: np.ndarray, slope: float, shift: float) -> np.ndarray:
    """Each row's chosen option (its largest probability) given sigmoid(slope * logit(p) + shift), the
    others scaled to fill the rest in the same proportions; never so low that another option would overtake
    it (the choice never changes). Rows without any probability stay as they are."""
    if slope == 1.0 and shift == 0.0:
        return p
    out = np.array(p, dtype=float, copy=True)
    rows = np.arange(len(out))
    top_index = out.argmax(axis=1)
    top = out[rows, top_index]
    second = np.partition(out, -2, axis=1)[:, -2] if out.shape[1] > 1 else np.zeros(len(out))
    new_top = 1.0 / (1.0 + np.exp(-(slope * _logit(top) + shift)))
    rest = 1.0 - top
    floor = np.divide(second, rest + second, out=np.ones_like(top), where=rest + second > 0)
    new_top = np.minimum(np.maximum(new_top, floor * (1 + 1e-9)), 1.0)  # strictly above: a tie could re-order
    movable = (top > 0) & (rest > 1e-12)
    scale = np.divide(1.0 - new_top, rest, out=np.ones_like(top), where=movable)
    out[movable] *= scale[movable, None]
    out[rows[movable], top_index[movable]] = new_top[movable]
    return out
