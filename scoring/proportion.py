"""Confidence intervals of a proportion (pure; no Django).

A pass rate is the share of a task's episodes that ran to their end (seed 000),
so its uncertainty is that of a binomial proportion over the task's episodes.
The Wilson score interval is used rather than the normal approximation because
pass rates sit near 1.0, where the normal interval runs past 1 and collapses to a
point for 100% (Wilson stays inside [0, 1] and keeps a width for k = n).
"""

from __future__ import annotations

import math

# Two-sided 95%: the same level as the runs' bootstrap intervals (scoring.uncertainty).
Z_95 = 1.959963984540054


def wilson_interval(rate: float | None, trials: int, *, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion ``rate`` observed over ``trials`` trials.

    ``rate * trials`` is rounded to whole successes (a stored pass rate is k / n up to
    float noise). None when there is nothing to estimate (no rate or no trials)."""
    if rate is None or trials <= 0 or not math.isfinite(rate):
        return None
    successes = min(trials, max(0, round(rate * trials)))
    p = successes / trials
    z2 = z * z
    denominator = 1 + z2 / trials
    centre = (p + z2 / (2 * trials)) / denominator
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def intervals_overlap(first: tuple[float, float] | None, second: tuple[float, float] | None) -> bool | None:
    """Whether two closed intervals share a point; None when either is unknown."""
    if first is None or second is None:
        return None
    return first[0] <= second[1] and second[0] <= first[1]
