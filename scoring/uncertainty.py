"""Seeded, deterministic bootstrap confidence intervals, vectorised with numpy.

* :func:`run_intervals` -- a run's Overall, Reproduction and Open scores,
  two-stage: resample tasks with replacement, and for every drawn task
  resample its evaluator episodes with replacement and re-score it with the
  same rules as :func:`scoring.gap.score_run`.

Randomness comes only from ``numpy.random.default_rng(seed)`` (PCG64), consumed
in a fixed order, so the same inputs and seed give the same intervals on every
platform for the pinned numpy version (requirements.txt). Percentiles use
nearest ranks: for 1,000 resamples at 95% the interval is ``[sorted[25],
sorted[974]]``.

Speed: a run of 11 tasks x 100 episodes costs a few milliseconds for 1,000
resamples (about 58 ms in the pure-Python version this replaced): each task's
replicates are one ``bincount`` and one small matrix product, each category's
task-level resamples one gather and one row sum.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

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
from scoring.validate import fail, positive_int

__all__ = [
    "DEFAULT_LEVEL",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "Interval",
    "RunIntervals",
    "TaskColumns",
    "pack_run_columns",
    "percentile_interval",
    "run_intervals",
    "run_intervals_from_columns",
    "task_columns",
    "unpack_run_columns",
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


def percentile_interval(
    stats: Sequence[float] | npt.NDArray[np.float64], level: float = DEFAULT_LEVEL
) -> Interval | None:
    """Nearest-rank percentile interval of bootstrap statistics.

    ``low = sorted[floor(a * n)]``, ``high = sorted[ceil((1 - a) * n) - 1]``
    with ``a = (1 - level) / 2`` (a 1e-9 guard absorbs float noise in
    ``a * n``).  None for no statistics.
    """
    alpha = (1.0 - _check_level(level)) / 2.0
    ordered: Sequence[float] | npt.NDArray[np.float64]
    if isinstance(stats, np.ndarray) and stats.dtype == np.float64 and stats.ndim == 1 and not np.isnan(stats).any():
        # The bootstrap's own statistics: numpy's stable sort orders them exactly as sorted() would
        # (both stable, both by <; NaN, which sorted() leaves in no defined order, is excluded),
        # without a Python float per statistic.
        ordered = np.sort(stats, kind="stable")
    else:
        ordered = sorted(stats)
    count = len(ordered)
    if count == 0:
        return None
    low = min(count - 1, max(0, math.floor(alpha * count + 1e-9)))
    high = min(count - 1, max(0, math.ceil((1.0 - alpha) * count - 1e-9) - 1))
    return Interval(low=float(ordered[low]), high=float(ordered[high]), level=float(level), resamples=count)


@dataclass(frozen=True)
class TaskColumns:
    """A task's evaluator episodes as columns, what the bootstrap reads of them.

    ``values`` is a ``(1 + len(metrics), n)`` float64 array: row 0 each episode's metric, row
    ``1 + i`` its rate of ``metrics[i]``; NaN where the episode reports none (episode values
    are finite, so NaN is free to mean "absent"). ``metrics`` are the task's declared safety
    metrics, sorted. Built from validated episodes by :func:`task_columns`, stored with
    :func:`pack_run_columns` so a follow-up can recompute intervals without the bundle.
    """

    values: npt.NDArray[np.float64]
    metrics: tuple[str, ...]
    faithful: bool | None

    @property
    def covered(self) -> bool:
        """True when some episode reports a metric (``aggregate_episodes(...).measured`` is not None)."""
        return bool(self.values.shape[1]) and not bool(np.isnan(self.values[0]).all())


def task_columns(result: TaskResult, metrics: Sequence[str]) -> TaskColumns:
    """The episodes of ``result`` as :class:`TaskColumns` for the declared safety ``metrics``
    (rates of other metrics are ignored, as scoring ignores them). Values are taken as they are:
    validate them first (:func:`scoring.gap.aggregate_episodes`)."""
    names = tuple(sorted(metrics))
    episodes = result.episodes
    nan = math.nan
    rows = [[nan if e.metric is None else e.metric for e in episodes]]
    rows += [[e.rates.get(metric, nan) for e in episodes] for metric in names]
    values = np.array(rows, dtype=np.float64).reshape(1 + len(names), len(episodes))
    return TaskColumns(values=values, metrics=names, faithful=result.faithful)


# Stored form of a run's tasks: a JSON header line (format version; per task, in slug order, its
# slug, episode count, metric names and faithfulness verdict), then each task's values as
# little-endian float64, row by row, in that order. Versioned so a later layout can still read old rows.
_PACK_VERSION = 1


def pack_run_columns(columns: Mapping[str, TaskColumns]) -> bytes:
    """One run's :class:`TaskColumns` as bytes (:func:`unpack_run_columns` reads them back)."""
    slugs = sorted(columns)
    header = {
        "v": _PACK_VERSION,
        "tasks": [
            [slug, int(columns[slug].values.shape[1]), list(columns[slug].metrics), columns[slug].faithful]
            for slug in slugs
        ],
    }
    bodies = [columns[slug].values.astype("<f8", copy=False).tobytes() for slug in slugs]
    return b"".join([json.dumps(header).encode(), b"\n", *bodies])


def unpack_run_columns(blob: bytes | memoryview) -> dict[str, TaskColumns] | None:
    """:func:`pack_run_columns`' bytes back to :class:`TaskColumns` by slug; None for bytes that
    are not such a packing (so the caller falls back to the episodes' source)."""
    head, sep, body = bytes(blob).partition(b"\n")
    if not sep:
        return None
    try:
        header = json.loads(head)
        if header["v"] != _PACK_VERSION:
            return None
        tasks = [
            (str(slug), int(n), tuple(str(m) for m in metrics), faithful)
            for slug, n, metrics, faithful in header["tasks"]
        ]
    except (ValueError, KeyError, TypeError):
        return None
    if len(body) != sum(8 * n * (1 + len(metrics)) for _, n, metrics, _ in tasks):
        return None
    values = np.frombuffer(body, dtype="<f8").astype(np.float64)
    out: dict[str, TaskColumns] = {}
    start = 0
    for slug, n, metrics, faithful in tasks:
        size = n * (1 + len(metrics))
        block = values[start : start + size].reshape(1 + len(metrics), n)
        out[slug] = TaskColumns(values=block, metrics=metrics, faithful=faithful if faithful in (True, False) else None)
        start += size
    return out


# Draws per block of replicates in _task_replicates: 8-byte temporaries of 12,288 elements (96 KiB)
# sit under glibc's default 128 KiB mmap threshold.
_BLOCK_ELEMENTS = 12_288


def _task_replicates(
    rng: np.random.Generator, spec: TaskSpec, task: TaskColumns, count: int
) -> npt.NDArray[np.float64]:
    """``count`` episode-level bootstrap replicates of a task's final score (NaN: missing).

    Each replicate resamples the task's ``n`` episodes with replacement: an ``(count, n)``
    matrix of draws becomes, through one ``bincount``, how often each episode was drawn in
    each replicate, and one matrix product with the episode columns (metric, metric present,
    each penalty's rate and presence) gives every replicate's sums at once. The replicate is
    then scored exactly as :func:`scoring.gap.score_run` scores the task: mean metric over
    the episodes reporting one (NaN when none does: the task is missing in that replicate),
    gap against the anchor clamped to ``[0, cap]``, each penalty's mean rate (factor 0 when
    no episode reports it: fail-closed), the faithfulness gate.
    """
    values = task.values
    n = values.shape[1]
    metrics = task.metrics
    # Columns: (value with 0 for absent, present) per row of ``values``, interleaved.
    present = ~np.isnan(values)
    columns = np.empty((n, 2 * values.shape[0]))
    columns[:, 0::2] = np.where(present, values, 0.0).T
    columns[:, 1::2] = present.T
    # 16-bit draws where they fit: numpy draws them several times faster than 64-bit ones.
    # One call for the whole matrix: the random stream does not depend on the blocks below.
    draws = rng.integers(0, n, size=(count, n), dtype=np.uint16 if n <= 1 << 16 else np.int64)
    # Counts and sums a block of rows at a time: each block's temporaries stay under the
    # allocator's mmap threshold, so they reuse heap memory instead of mapping (and
    # page-faulting in) fresh pages per task, which cost about a third of the CPU.
    # The block size fixes the matrix products' shapes, and so their float rounding: changing
    # it could move the last bits of an interval (see docs/scoring.md, "Speed").
    rows = max(1, _BLOCK_ELEMENTS // n)
    offsets = np.arange(min(rows, count), dtype=np.intp)[:, None] * n
    # One flat-index buffer for every block, written in place: a fresh array per block cost
    # about a quarter of this function's CPU (allocation, then a second pass to ravel it).
    flat = np.empty(min(rows, count) * n, dtype=np.intp)
    sums = np.empty((count, columns.shape[1]))
    # Finite values near the largest double can sum past it: that replicate's sum is inf, its
    # mean inf, and its gap clamps to the cap as score_run's does (expected: no warning).
    with np.errstate(over="ignore"):
        for start in range(0, count, rows):
            block = draws[start : start + rows]
            size = block.shape[0]
            indices = flat[: size * n]
            np.add(block, offsets[:size], out=indices.reshape(size, n))
            times = np.bincount(indices, minlength=size * n).reshape(size, n)  # how often each episode was drawn
            np.matmul(times, columns, out=sums[start : start + size])
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mean = sums[:, 0] / sums[:, 1]
        anchor = float(spec.paper_value)
        if spec.direction == HIGHER_IS_BETTER:
            gaps = np.clip(mean / anchor, 0.0, float(spec.cap))
        else:
            gaps = np.clip(anchor / np.maximum(mean, EPS), 0.0, float(spec.cap))
        gaps[sums[:, 1] == 0] = np.nan
        factors = np.full(count, 1.0 if spec.genre == OPEN or task.faithful is True else 0.0)
        for position, metric in enumerate(metrics):
            rate_sum, present_count = sums[:, 2 + 2 * position], sums[:, 3 + 2 * position]
            penalty = 1.0 - np.minimum(1.0, (rate_sum / present_count) / float(spec.penalties[metric]))
            factors *= np.where(present_count == 0, 0.0, penalty)
    replicates: npt.NDArray[np.float64] = gaps * factors
    return replicates


def _occurrence_ranks(draws: npt.NDArray[np.int64], size: int) -> npt.NDArray[np.int64]:
    """For each draw (flat, in order), how many earlier draws picked the same position:
    the k-th use of a task takes its k-th replicate."""
    # A task pool is small: sorted as 8- or 16-bit keys, numpy's stable sort is a radix sort
    # (linear) instead of a merge sort of 64-bit keys. Stable either way: the same ranks.
    keys = draws.astype(np.uint8 if size <= 1 << 8 else np.uint16 if size <= 1 << 16 else np.int64)
    order = np.argsort(keys, kind="stable")
    starts = np.searchsorted(draws[order], np.arange(size))
    ranks = np.empty_like(draws)
    ranks[order] = np.arange(draws.size) - starts[draws[order]]
    return ranks


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
    columns: dict[str, TaskColumns] = {}
    for slug in sorted(results):
        penalties = release.tasks[slug].penalties
        aggregate_episodes(results[slug].episodes, penalties, slug=slug)  # validates, as score_run does
        columns[slug] = task_columns(results[slug], sorted(penalties))
    return run_intervals_from_columns(release, columns, resamples=count, level=level, seed=seed)


def _check_columns(release: ReleaseSpec, columns: Mapping[str, TaskColumns]) -> None:
    """Every column set belongs to a task of ``release`` and carries its safety metrics, sorted."""
    for slug, task in columns.items():
        if slug not in release.tasks:
            raise fail("run", "task", "a slug of the release's required task set", slug)
        if task.metrics != tuple(sorted(release.tasks[slug].penalties)):
            raise fail(slug, "metrics", "the task's declared safety metrics, sorted", list(task.metrics))


def _replicates_needed(
    covered: list[str], pools: Mapping[str, list[str]], draws: Mapping[str, npt.NDArray[np.int64]]
) -> dict[str, int]:
    """How many bootstrap replicates each covered task needs: the most times any one category's
    draws pick it over all resamples (the categories share one set of replicates)."""
    usage = dict.fromkeys(covered, 0)
    for name, picks in draws.items():
        uses = np.bincount(picks, minlength=len(pools[name]))
        for position, slug in enumerate(pools[name]):
            if slug in usage:
                usage[slug] = max(usage[slug], int(uses[position]))
    return usage


def run_intervals_from_columns(
    release: ReleaseSpec,
    columns: Mapping[str, TaskColumns],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int = DEFAULT_SEED,
) -> RunIntervals:
    """:func:`run_intervals` from episodes already validated and laid out as columns (what
    verification stored): the same draws, the same numbers. Every task's ``metrics`` must be
    its declared safety metrics in ``release``, sorted."""
    count = positive_int("bootstrap", "resamples", resamples)
    _check_level(level)
    _check_columns(release, columns)
    covered = [slug for slug in sorted(columns) if columns[slug].covered]
    zero_missing = release.missing_task_policy != EXCLUDE
    required = sorted(release.tasks)
    pools: dict[str, list[str]] = {"overall": covered if not zero_missing else required}
    for genre in GENRES:
        pools[genre] = [slug for slug in pools["overall"] if release.tasks[slug].genre == genre]
    rng = np.random.default_rng(seed)
    # Task-level draws, one (resamples x pool size) matrix per category, in a fixed order.
    draws = {name: rng.integers(0, len(pool), size=count * len(pool)) for name, pool in pools.items() if pool}
    usage = _replicates_needed(covered, pools, draws)
    # Every covered task's replicates in one array (tasks sorted by slug, in that order drawn),
    # and a NaN at the end that uncovered tasks (zero policy: missing, counted as 0) point to.
    offsets: dict[str, int] = {}
    parts: list[npt.NDArray[np.float64]] = []
    total = 0
    for slug in covered:
        if usage[slug]:
            offsets[slug] = total
            parts.append(_task_replicates(rng, release.tasks[slug], columns[slug], usage[slug]))
            total += usage[slug]
    replicates = np.concatenate([*parts, np.array([np.nan])])
    intervals: dict[str, Interval | None] = {}
    for name, pool in pools.items():
        if not pool:
            intervals[name] = None
            continue
        picks = draws[name]
        start = np.array([offsets.get(slug, -1) for slug in pool])
        slots = np.where(start[picks] >= 0, start[picks] + _occurrence_ranks(picks, len(pool)), total)
        values = replicates[slots].reshape(count, len(pool))
        missing = np.isnan(values)
        sums = np.where(missing, 0.0, values).sum(axis=1)
        if zero_missing:
            stats = sums / len(pool)
        else:
            present = len(pool) - missing.sum(axis=1)
            stats = sums[present > 0] / present[present > 0]
        intervals[name] = percentile_interval(stats, level)
    return RunIntervals(overall=intervals["overall"], reproduction=intervals[REPRODUCTION], open=intervals[OPEN])
