"""A perfectly calibrated router, simulated: how often the confirm half of ``find_threshold`` reads its
fitted threshold as confirmed, not confirmed or inconclusive (``benchmarks/threshold_confirmation.py``).

Model: ``requests`` requests, each with a confidence drawn from Beta(a, b) and right with exactly that
probability (perfect calibration; one verdict per request, as a deterministic router gives under every
seed). The threshold is fitted on the fit half (the lowest cut whose kept decisions reach the target) and
judged on the confirm half, exactly as the report does. The threshold sits where the kept accuracy is just
at the target, so the confirm half's point estimate falls on either side about as often: a reading from
the point estimate alone says "not confirmed" for a router that is as good as it claims about half the time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tasks.stats.calibration import ThresholdFit, find_threshold


@dataclass(frozen=True)
class CalibratedRouter:
    requests: int = 200
    a: float = 6.0
    """Beta(a, b) of the confidences (mean a / (a + b))."""
    b: float = 1.5
    target: float = 0.90

    def fit(self, rng: np.random.Generator) -> ThresholdFit:
        confidence = rng.beta(self.a, self.b, self.requests)
        correct = rng.random(self.requests) < confidence
        ids = [f"r{i:05d}" for i in range(self.requests)]
        return find_threshold(confidence, correct, ids, self.target)


def point_reading(fit: ThresholdFit) -> str | None:
    """The point reading, kept to compare against: the confirm half's point estimate against the target."""
    if fit.confirm_accuracy is None:
        return None
    return "confirmed" if fit.confirm_accuracy.estimate >= fit.target_accuracy else "not confirmed"


def simulate(router: CalibratedRouter, replicates: int, seed: int) -> list[tuple[str | None, str | None]]:
    """(point reading, interval reading) of each replicate."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(replicates):
        fit = router.fit(rng)
        out.append((point_reading(fit), fit.confirmation))
    return out
