"""The statistics a comparison rests on, from the samples themselves: percentiles (linear
interpolation between order statistics, as numpy's default), the noise the repeats show, and the
verdict on one figure: worse or better only beyond the tolerance AND beyond that noise."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def spread(values: list[float]) -> float | None:
    """Half the range relative to the median: how far one sample may stray from the typical one."""
    if len(values) < 2:
        return None
    mid = median(values)
    return (max(values) - min(values)) / 2 / mid if mid > 0 else None


def latency_noise(per_request: list[list[float]]) -> float | None:
    spreads = [s for s in (spread(v) for v in per_request) if s is not None]
    return median(spreads) if spreads else None


@dataclass
class Verdict:
    """How one figure moved: "worse", "better" or "" (within the tolerance or the noise)."""

    direction: str
    change: float  # relative, after vs before (+0.5 = half again as much)
    noise: float  # relative noise both recordings show together


def verdict(before: float | None, after: float | None, tolerance: float, noise: float, higher_is_better: bool = False) -> Verdict | None:
    """A move counts only beyond the tolerance AND beyond the noise; None when not measured."""
    if before is None or after is None or before <= 0:
        return None
    change = after / before - 1
    loss = -change if higher_is_better else change
    if abs(loss) > tolerance and abs(loss) > noise:
        return Verdict("worse" if loss > 0 else "better", change, noise)
    return Verdict("", change, noise)
