"""An estimate with its interval: the one value type every statistic here returns."""

from __future__ import annotations

from dataclasses import dataclass

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Interval:
    """An estimate with its interval (all as fractions, 0..1 for proportions)."""

    estimate: float
    low: float
    high: float
    method: str
    n_effective: float | None = None
    """Effective number of independent trials behind a proportion's interval, where that applies."""

    @property
    def half_width(self) -> float:
        """Half the interval's width (for an asymmetric interval, the mean of the two sides)."""
        return (self.high - self.low) / 2

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high
