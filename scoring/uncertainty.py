"""Seeded, deterministic bootstrap confidence intervals.

* :func:`run_intervals` -- a run's Overall, Reproduction and Open scores,
  two-stage: resample tasks with replacement, and for every drawn task
  resample its evaluator episodes with replacement and re-score it with the
  same rules as :func:`scoring.gap.score_run`.
* :func:`success_rate_interval` -- a scorecard's success rate, resampling
  its (padded) episodes.

Randomness comes only from ``random.Random(seed)``; the same inputs and seed
give bit-identical intervals on every platform.  Percentiles use nearest
ranks: for 1,000 resamples at 95% the interval is ``[sorted[25],
sorted[974]]``.

Speed: indices into at most 256 items are drawn as random bytes mapped by one
``bytes.translate`` (rejection of the biased top bytes keeps them uniform),
and each resample's sum is one C-level ``sum(map(...))`` over a slice.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, cast

from scoring.gap import (
    EPS,
    EXCLUDE,
    GENRES,
    HIGHER_IS_BETTER,
    OPEN,
    REPRODUCTION,
    ReleaseSpec,
    TaskResult,
    TaskSpec,
    aggregate_episodes,
)
from scoring.scorecard import Scorecard
from scoring.validate import fail, positive_int

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "Interval",
    "RunIntervals",
    "percentile_interval",
    "run_intervals",
    "success_rate_interval",
]

DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95
DEFAULT_SEED = 0


@dataclass(frozen=True)
class Interval:
    """A two-sided bootstrap percentile interval."""

    low: float
    high: float
    level: float
    resamples: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {"low": self.low, "high": self.high, "level": self.level, "resamples": self.resamples}


@dataclass(frozen=True)
class RunIntervals:
    """Intervals for a run's category scores (None: nothing to resample)."""

    overall: Interval | None
    reproduction: Interval | None
    open: Interval | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, keyed like ``aggregates`` of a breakdown."""
        return {
            "overall": None if self.overall is None else self.overall.to_dict(),
            "reproduction": None if self.reproduction is None else self.reproduction.to_dict(),
            "open": None if self.open is None else self.open.to_dict(),
        }


def _check_level(level: float) -> float:
    if isinstance(level, bool) or not isinstance(level, int | float) or not 0.0 < float(level) < 1.0:
        raise fail("bootstrap", "level", "a number strictly between 0 and 1", level)
    return float(level)


def percentile_interval(stats: Sequence[float], level: float = DEFAULT_LEVEL) -> Interval | None:
    """Nearest-rank percentile interval of bootstrap statistics.

    ``low = sorted[floor(a * n)]``, ``high = sorted[ceil((1 - a) * n) - 1]``
    with ``a = (1 - level) / 2`` (a 1e-9 guard absorbs float noise in
    ``a * n``).  None for no statistics.
    """
    alpha = (1.0 - _check_level(level)) / 2.0
    ordered = sorted(stats)
    count = len(ordered)
    if count == 0:
        return None
    low = min(count - 1, max(0, math.floor(alpha * count + 1e-9)))
    high = min(count - 1, max(0, math.ceil((1.0 - alpha) * count - 1e-9) - 1))
    return Interval(low=ordered[low], high=ordered[high], level=float(level), resamples=count)


def _draw(rng: random.Random, n: int, k: int, values: Sequence[int] | None = None) -> Sequence[int]:
    """``k`` uniform draws of ``values[i]`` for ``i`` in ``range(n)``.

    ``values`` defaults to the index itself.  For ``n <= 256`` the draws are
    random bytes: byte ``b < 256 // n * n`` maps to ``values[b % n]`` and the
    rest are dropped, so every index is equally likely.
    """
    if n > 256:
        picks = rng.choices(range(n), k=k)
        return picks if values is None else [values[i] for i in picks]
    usable = 256 // n * n
    table = bytes((values[b % n] if values is not None else b % n) if b < usable else 0 for b in range(256))
    delete = bytes(range(usable, 256))
    out = bytearray()
    while len(out) < k:
        missing = k - len(out)
        out += rng.randbytes(missing * 256 // usable + 16).translate(table, delete)
    return bytes(out[:k])


def _small_whole_numbers(column: Sequence[float]) -> bytes | None:
    """``column`` as bytes when every value is a whole number in [0, 255] (e.g. 0/1 success), else None."""
    try:
        table = bytes(int(value) for value in column)
    except (ValueError, OverflowError):
        return None
    return table if all(value == byte for value, byte in zip(column, table, strict=True)) else None


def _chunk_sums(column: Sequence[float], draws: Sequence[int], n: int) -> list[float]:
    """Sums of ``column`` over consecutive blocks of ``n`` draws.

    Whole-number columns (0/1 success metrics, all-zero rates) drawn as bytes are summed
    as bytes: the draws are mapped to the values by one ``bytes.translate`` and each block
    is a C-level ``sum`` of small ints. Bit-identical to adding the floats in draw order:
    every partial sum is a whole number far below 2**53, so each float addition is exact.
    """
    if isinstance(draws, bytes):
        whole = _small_whole_numbers(column)
        if whole is not None:
            values = draws.translate(whole.ljust(256, b"\0"))
            return [float(sum(values[start : start + n])) for start in range(0, len(values), n)]
    pick = column.__getitem__
    return [sum(map(pick, draws[start : start + n])) for start in range(0, len(draws), n)]


def _chunk_counts(present: Sequence[bool], draws: Sequence[int], n: int) -> list[float]:
    """How many of each block of ``n`` draws hit a present item."""
    if all(present):
        return [float(n)] * (len(draws) // n)
    if isinstance(draws, bytes):
        absent = draws.translate(bytes(0 if i < n and present[i] else 1 for i in range(256)))
        return [float(n - absent.count(1, start, start + n)) for start in range(0, len(draws), n)]
    return _chunk_sums([1.0 if flag else 0.0 for flag in present], draws, n)


def _task_replicates(rng: random.Random, spec: TaskSpec, result: TaskResult, count: int) -> list[float | None]:
    """``count`` episode-level bootstrap replicates of a task's final score.

    None where a resample has no episode reporting a metric (the task is
    then missing in that replicate, as in :func:`scoring.gap.score_run`).
    """
    episodes = result.episodes
    n = len(episodes)
    draws = _draw(rng, n, n * count)
    metric_values = [0.0 if e.metric is None else float(e.metric) for e in episodes]
    metric_sums = _chunk_sums(metric_values, draws, n)
    metric_counts = _chunk_counts([e.metric is not None for e in episodes], draws, n)
    anchor = float(spec.paper_value)
    cap = float(spec.cap)
    if spec.direction == HIGHER_IS_BETTER:
        gaps = [
            None if c == 0 else min(max((s / c) / anchor, 0.0), cap)
            for s, c in zip(metric_sums, metric_counts, strict=True)
        ]
    else:
        gaps = [
            None if c == 0 else min(max(anchor / max(s / c, EPS), 0.0), cap)
            for s, c in zip(metric_sums, metric_counts, strict=True)
        ]
    gate = 1.0 if spec.genre == OPEN or result.faithful is True else 0.0
    factors = [gate] * count
    for metric in sorted(spec.penalties):
        limit = float(spec.penalties[metric])
        values = [float(e.rates.get(metric, 0.0)) for e in episodes]
        sums = _chunk_sums(values, draws, n)
        counts = _chunk_counts([metric in e.rates for e in episodes], draws, n)
        factors = [
            0.0 if c == 0 else f * (1.0 - min(1.0, (s / c) / limit))
            for f, s, c in zip(factors, sums, counts, strict=True)
        ]
    return [None if g is None else g * f for g, f in zip(gaps, factors, strict=True)]


def _outer(
    pool: Sequence[str],
    replicates: Mapping[str, list[float | None]],
    draws: Sequence[int],
    zero_missing: bool,
) -> list[float]:
    """Task-level resamples: the mean over each block of ``len(pool)`` drawn
    tasks, the k-th use of a task taking its k-th inner replicate."""
    m = len(pool)
    takers = [iter(replicates[slug]).__next__ if replicates[slug] else repeat(None).__next__ for slug in pool]
    values = [takers[position]() for position in draws]
    blocks = range(0, len(values), m)
    if None not in values:
        complete = cast(list[float], values)
        return [sum(complete[start : start + m]) / m for start in blocks]
    stats: list[float] = []
    for start in blocks:
        block = values[start : start + m]
        present = m if zero_missing else m - block.count(None)
        if present:
            stats.append(sum(value for value in block if value is not None) / present)
    return stats


def run_intervals(
    release: ReleaseSpec,
    results: Mapping[str, TaskResult],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int = DEFAULT_SEED,
) -> RunIntervals:
    """Bootstrap CIs of a run's Overall / Reproduction / Open scores.

    Each category resamples its task pool (covered tasks under the
    "exclude" policy; all required tasks, uncovered ones fixed at 0, under
    "zero") with replacement; every drawn task slot takes a fresh
    episode-level replicate of that task.  Inputs are validated exactly as
    :func:`scoring.gap.score_run` does.  Deterministic for a given ``seed``.
    """
    count = positive_int("bootstrap", "resamples", resamples)
    _check_level(level)
    for slug in results:
        if slug not in release.tasks:
            raise fail("run", "task", "a slug of the release's required task set", slug)
    covered: list[str] = []
    for slug in sorted(results):
        aggregate = aggregate_episodes(results[slug].episodes, release.tasks[slug].penalties, slug=slug)
        if aggregate.measured is not None:
            covered.append(slug)
    zero_missing = release.missing_task_policy != EXCLUDE
    required = sorted(release.tasks)
    pools: dict[str, list[str]] = {"overall": covered if not zero_missing else required}
    for genre in GENRES:
        pools[genre] = [slug for slug in pools["overall"] if release.tasks[slug].genre == genre]
    rng = random.Random(seed)
    draws = {name: _draw(rng, len(pool), len(pool) * count) if pool else b"" for name, pool in pools.items()}
    usage = dict.fromkeys(covered, 0)
    for name, pool in pools.items():
        picks = draws[name]
        for position, slug in enumerate(pool):
            if slug in usage:
                usage[slug] = max(usage[slug], picks.count(position))
    replicates: dict[str, list[float | None]] = {slug: [] for slug in required}
    for slug in covered:
        if usage[slug]:
            replicates[slug] = _task_replicates(rng, release.tasks[slug], results[slug], usage[slug])
    intervals: dict[str, Interval | None] = {}
    for name, pool in pools.items():
        stats = _outer(pool, replicates, draws[name], zero_missing) if pool else []
        intervals[name] = percentile_interval(stats, level)
    return RunIntervals(overall=intervals["overall"], reproduction=intervals[REPRODUCTION], open=intervals[OPEN])


def success_rate_interval(
    card: Scorecard,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int = DEFAULT_SEED,
) -> Interval:
    """Bootstrap CI of a scorecard's success rate.

    Resamples the card's ``episodes`` (the full padded set: padded episodes
    are unsolved) with replacement and counts solves.
    """
    count = positive_int("bootstrap", "resamples", resamples)
    _check_level(level)
    n = positive_int("scorecard", "episodes", card.episodes)
    solved = card.solved
    if isinstance(solved, bool) or not isinstance(solved, int) or not 0 <= solved <= n:
        raise fail("scorecard", "solved", f"an integer in [0, {n}]", solved)
    rng = random.Random(seed)
    flags = [1 if i < solved else 0 for i in range(n)]
    draws = _draw(rng, n, n * count, flags)
    stats = [sum(draws[start : start + n]) / n for start in range(0, n * count, n)]
    interval = percentile_interval(stats, level)
    assert interval is not None  # count >= 1
    return interval
