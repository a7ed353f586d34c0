"""One BLAS thread for the iterative fits of training (``fit_logit``, ``fit_probe``).

L-BFGS calls BLAS thousands of times on small matrices (hundreds of rows); OpenBLAS then spends its time
waking and spinning its threads instead of multiplying. Measured on this 2-core machine (the support set's
``tooleval train``, 16 probe fits): 24.7 s wall / 48.3 CPU s with OpenBLAS's default of a thread per core,
2.2 s / 2.1 CPU s with one; one probe fit of 430 requests x 31 labels: 1.26 s against 0.065 s. Encoding
(torch) and scoring (one large product a batch) are left as they are.
"""

from __future__ import annotations

import functools
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)


def one_blas_thread(function: F) -> F:
    """Run ``function`` with the BLAS libraries numpy and scipy loaded limited to one thread (restored after)."""

    @functools.wraps(function)
    def limited(*args, **kwargs):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return function(*args, **kwargs)

    return limited  # type: ignore[return-value]
