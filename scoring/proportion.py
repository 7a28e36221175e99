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
    return wilson_bounds(successes, trials, z=z)


def wilson_bounds(successes: int, trials: int, *, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` of ``trials`` (0 <= successes <= trials, trials >= 1).

    At the edges the bound is exactly 0 (none) or 1 (all): the general formula reaches it only up
    to rounding (3.5e-18, 0.9999999999999999), which the boards and exports would print."""
    if successes == trials:  # the mirror of none solved: Wilson's interval is symmetric in k <-> n - k
        return 1.0 - _wilson(0, trials, z)[1], 1.0
    low, high = _wilson(successes, trials, z)
    return (0.0 if successes == 0 else low), high


def _wilson(successes: int, trials: int, z: float) -> tuple[float, float]:
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
