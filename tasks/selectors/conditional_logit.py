"""A conditional logit over each request's options (its offered tools, and 'none'), fitted with L-BFGS, and
temperature scaling of its utilities on held-out predictions.

The utility of tool j for request i is ``tool_x[i, j] . w_tool``, that of 'none' is ``none_x[i] . w_none``;
P(option) is the softmax of the utilities over the request's options (padding masked out). One weight
vector is shared by every tool, so the model scores tools it never saw in training.
"""

from __future__ import annotations

import numpy as np

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
    y = _targets(labels, width)
    share = np.full(n, 1.0 / n) if row_weights is None else np.asarray(row_weights, dtype=float) / np.sum(row_weights)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w_tool, w_none = theta[:d], (theta[d:] if with_none else None)
        u = utilities(tool_x, mask, none_x, w_tool, w_none)
        top = np.max(u, axis=1, keepdims=True)
        log_z = top[:, 0] + np.log(np.exp(u - top).sum(axis=1))
        p = np.exp(u - log_z[:, None])
        picked = np.where(y > 0, u, 0.0).sum(axis=1)
        value = float(share @ (log_z - picked) + l2 * theta @ theta)
        diff = (p - y) * share[:, None]
        grad = np.empty_like(theta)
        grad[:d] = np.einsum("ij,ijk->k", diff[:, :width], tool_x)
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
