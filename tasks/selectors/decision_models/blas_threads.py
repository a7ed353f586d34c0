"""One BLAS thread for the iterative fits of training (``fit_logit``; ``fit_probes`` sets its own).

L-BFGS calls BLAS thousands of times on small matrices (hundreds of rows); OpenBLAS then spends its time
waking and spinning its threads instead of multiplying, so one thread trains many times faster than a
thread per core. Encoding (torch) and scoring (one large product a batch) are left as they are.
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
