"""Paper-gap scoring (seed 000 "Scoring", seed 003 "Task authoring").

Longer than 500 lines on purpose: one module per seed, so every rule of docs/scoring.md
sections 1-5 is found in this one file.

Every rule of the two seeds is a named function here:

* :func:`gap_score` -- measured vs paper anchor, clamped to ``[0, cap]``;
* :func:`penalty_factor` -- zero-target safety penalty, fail-closed;
* :func:`task_score` -- gap x penalties, then the reproduction faithfulness gate;
* :func:`macro_mean` -- unweighted mean over the required task set;
* :func:`required_task_set_hash` and :func:`coverage`;
* :func:`pass_rate` and :func:`aggregate_episodes` -- evaluator episodes to a
  task's measured value, safety rates and pass rate;
* :func:`category_scores` and :func:`score_run` -- the whole run, as the
  worker and the bundle checker call it.

Standard library only, no rounding anywhere (rounding is for display).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scoring.errors import ScoringError
from scoring.validate import at_least, fail, finite, non_negative, positive

__all__ = [
    "ANCHOR_DERIVED_TASK_FIELDS",
    "DEFAULT_CAP",
    "DIRECTIONS",
    "EPS",
    "EXCLUDE",
    "GENRES",
    "HIGHER_IS_BETTER",
    "LOWER_IS_BETTER",
    "MISSING_TASK_POLICIES",
    "OPEN",
    "REPRODUCTION",
    "SCORE_AGGREGATES",
    "ZERO",
    "Coverage",
    "Episode",
    "EpisodeAggregate",
    "ReleaseSpec",
    "RunBreakdown",
    "TaskBreakdown",
    "TaskResult",
    "TaskScore",
    "TaskSpec",
    "aggregate_episodes",
    "category_scores",
    "coverage",
    "gap_score",
    "macro_mean",
    "pass_rate",
    "penalty_factor",
    "required_task_set_hash",
    "score_run",
    "task_score",
]

EPS = 1e-9
DEFAULT_CAP = 1.5
HIGHER_IS_BETTER = "higher_is_better"
LOWER_IS_BETTER = "lower_is_better"
DIRECTIONS = (HIGHER_IS_BETTER, LOWER_IS_BETTER)
REPRODUCTION = "reproduction"
OPEN = "open"
GENRES = (REPRODUCTION, OPEN)
EXCLUDE = "exclude"
ZERO = "zero"
MISSING_TASK_POLICIES = (EXCLUDE, ZERO)
# A task breakdown's fields computed from its anchor; measured, penalties, factor and pass rate
# are not (they come from the evaluator's episodes and the published penalty limits).
ANCHOR_DERIVED_TASK_FIELDS: frozenset[str] = frozenset({"gap", "score", "final"})
# A run's aggregates that are macro means of task finals (coverage and pass rate are not): every
# task's, then each genre's.
SCORE_AGGREGATES: tuple[str, ...] = ("overall", REPRODUCTION, OPEN)


def _where(slug: str | None) -> str:
    return "task" if slug is None else f"task {slug!r}"


def _check_choice(where: str, name: str, value: object, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise fail(where, name, "one of " + ", ".join(repr(c) for c in choices), value)
    return value


def _check_faithful(where: str, faithful: object) -> bool | None:
    if faithful is not None and not isinstance(faithful, bool):
        raise fail(where, "faithful", "True, False or None", faithful)
    return faithful


# ---------------------------------------------------------------- task rules


def gap_score(
    measured: float,
    paper_value: float,
    direction: str,
    cap: float = DEFAULT_CAP,
    *,
    slug: str | None = None,
) -> float:
    """Normalise ``measured`` against the paper anchor (seed 000 "Gap score").

    * higher_is_better: ``clamp(measured / paper_value, 0, cap)``
    * lower_is_better:  ``clamp(paper_value / max(measured, EPS), 0, cap)``

    ``paper_value`` must be > 0 and ``cap`` >= 1.  A negative measured value
    clamps to 0 for higher_is_better; for lower_is_better (times, errors) it
    is meaningless and rejected, since it would otherwise score the cap.
    """
    where = _where(slug)
    kind = _check_choice(where, "direction", direction, DIRECTIONS)
    value = finite(where, "measured", measured)
    anchor = positive(where, "paper_value", paper_value)
    limit = at_least(where, "cap", cap, 1.0)
    if kind == HIGHER_IS_BETTER:
        ratio = value / anchor
    else:
        if value < 0:
            raise fail(where, "measured", "a finite number >= 0 for a lower_is_better metric", measured)
        ratio = anchor / max(value, EPS)
    return min(max(ratio, 0.0), limit)


def penalty_factor(
    rate: float | None,
    limit: float,
    *,
    slug: str | None = None,
    metric: str = "rate",
) -> float:
    """Zero-target safety penalty: ``1 - min(1, rate / limit)``.

    ``rate is None`` means the declared safety metric is missing from the
    results: worst case, factor 0.0 (fail-closed, seeds 000 and 003).
    """
    where = _where(slug)
    bound = positive(where, f"penalties[{metric!r}].limit", limit)
    if rate is None:
        return 0.0
    observed = non_negative(where, f"rates[{metric!r}]", rate)
    return 1.0 - min(1.0, observed / bound)


@dataclass(frozen=True)
class TaskScore:
    """One task's score, every intermediate kept for the breakdown."""

    gap: float
    factors: dict[str, float]
    factor: float
    score: float
    final: float


def task_score(
    *,
    measured: float,
    paper_value: float,
    direction: str,
    cap: float = DEFAULT_CAP,
    penalties: Mapping[str, float],
    rates: Mapping[str, float | None],
    genre: str,
    faithful: bool | None,
    slug: str | None = None,
) -> TaskScore:
    """Gap score x every penalty factor, then the faithfulness gate.

    ``penalties`` maps each declared safety metric to its limit; ``rates``
    maps metrics to observed rates.  A declared metric absent from ``rates``
    (or mapped to None) gets factor 0.  Rates of undeclared metrics are
    ignored.  Reproduction genre: ``final = score`` only when ``faithful is
    True``; False or None (no verdict) gives 0.  Open genre skips the gate.
    """
    where = _where(slug)
    kind = _check_choice(where, "genre", genre, GENRES)
    verdict = _check_faithful(where, faithful)
    gap = gap_score(measured, paper_value, direction, cap, slug=slug)
    factors = {
        metric: penalty_factor(rates.get(metric), penalties[metric], slug=slug, metric=metric)
        for metric in sorted(penalties)
    }
    factor = math.prod(factors.values())
    score = gap * factor
    gate_open = kind == OPEN or verdict is True
    final = score if gate_open else 0.0
    return TaskScore(gap=gap, factors=factors, factor=factor, score=score, final=final)


# --------------------------------------------------------------- aggregation


def macro_mean(
    scores: Iterable[float | None],
    *,
    policy: str = EXCLUDE,
    where: str = "macro_mean",
) -> float | None:
    """Unweighted mean over the required task set (seed 000 "macro_mean").

    ``None`` entries are missing tasks.  ``policy="exclude"`` drops them (the
    default, per the seed); ``policy="zero"`` counts them as 0.  Returns None
    when there is nothing to average: no present score under "exclude", an
    empty input under "zero".  Summation is exact (``math.fsum``), so the
    result does not depend on order.
    """
    _check_choice(where, "missing_task_policy", policy, MISSING_TASK_POLICIES)
    present: list[float] = []
    count = 0
    for index, value in enumerate(scores):
        if value is None:
            if policy == ZERO:
                count += 1
            continue
        present.append(non_negative(where, f"scores[{index}]", value))
        count += 1
    if count == 0:
        return None
    return math.fsum(present) / count


def _check_slug(where: str, slug: object) -> str:
    if not isinstance(slug, str) or not slug or "\n" in slug:
        raise fail(where, "slug", "a non-empty string without newlines", slug)
    return slug


def required_task_set_hash(slugs: Iterable[str]) -> str:
    """Canonical hash of a required task set.

    SHA-256 (lower-case hex) of the UTF-8 bytes of the de-duplicated slugs,
    sorted by code point (which equals UTF-8 byte order), joined by a single
    ``"\\n"`` with no trailing newline.  In shell::

        printf '%s' "$(LC_ALL=C sort -u slugs.txt)" | sha256sum
    """
    unique = sorted({_check_slug("required_task_set", slug) for slug in slugs})
    return hashlib.sha256("\n".join(unique).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Coverage:
    """How much of the required task set a run covers."""

    covered: int
    required: int
    complete: bool
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    hash_matches: bool | None

    def to_dict(self) -> dict[str, Any]:
        """The ``aggregates.coverage`` object of a score breakdown."""
        return {"covered": self.covered, "required": self.required, "complete": self.complete}


def coverage(covered: Iterable[str], required: Iterable[str], claimed_hash: str | None = None) -> Coverage:
    """Compare the tasks a run covers with the required set.

    ``covered`` counts only required tasks; ``extra`` lists covered slugs
    outside the required set.  ``complete`` means nothing is missing.
    ``hash_matches`` compares ``claimed_hash`` (case-insensitive hex) with
    :func:`required_task_set_hash` of ``required``; None when not claimed.
    """
    have = {_check_slug("coverage.covered", slug) for slug in covered}
    need = {_check_slug("coverage.required", slug) for slug in required}
    missing = tuple(sorted(need - have))
    extra = tuple(sorted(have - need))
    matches: bool | None = None
    if claimed_hash is not None:
        if not isinstance(claimed_hash, str):
            raise fail("coverage", "claimed_hash", "a hex string or None", claimed_hash)
        matches = claimed_hash.strip().lower() == required_task_set_hash(need)
    return Coverage(
        covered=len(have & need),
        required=len(need),
        complete=not missing,
        missing=missing,
        extra=extra,
        hash_matches=matches,
    )


# ------------------------------------------------------------------ episodes


@dataclass(frozen=True)
class Episode:
    """The evaluator's authoritative stats for one episode.

    ``metric`` is the measured domain metric (None: the evaluator reported
    none), ``rates`` each zero-target safety metric's rate in the episode,
    ``aborted`` True when reset mid-episode or the session was torn down.
    """

    metric: float | None
    rates: Mapping[str, float] = field(default_factory=dict)
    aborted: bool = False


def pass_rate(episodes: Iterable[Episode]) -> float | None:
    """Share of episodes that ran to their end without being aborted.

    None for no episodes (seed 000 "Pass rate").
    """
    total = 0
    passed = 0
    for episode in episodes:
        total += 1
        if not episode.aborted:
            passed += 1
    return passed / total if total else None


@dataclass(frozen=True)
class EpisodeAggregate:
    """A task's measured value, safety rates and pass counts from episodes."""

    measured: float | None
    rates: dict[str, float | None]
    passed: int
    total: int
    pass_rate: float | None


def aggregate_episodes(
    episodes: Iterable[Episode],
    safety_metrics: Iterable[str],
    *,
    slug: str | None = None,
) -> EpisodeAggregate:
    """Derive a task's inputs to :func:`task_score` from evaluator episodes.

    * ``measured`` = mean of the non-null episode metrics, aborted episodes
      included (aborting an episode never removes a bad measurement); None
      when no episode reports a metric -- the task is then not completed.
    * each declared safety metric's rate = mean over the episodes that report
      it; None when no episode does (fail-closed: factor 0).
    * ``passed`` / ``total`` / ``pass_rate`` per :func:`pass_rate`.

    Every metric and rate is validated (finite; rates >= 0).
    """
    declared = sorted(set(safety_metrics))
    # A list or tuple (what verification passes) of plainly valid episodes is checked column by
    # column in C-level loops, a task's hundreds of episodes at once; anything else (another
    # iterable, a value to convert or refuse) takes the episode-by-episode loop, which names it.
    columns = _plain_columns(episodes, declared) if isinstance(episodes, list | tuple) else None
    if columns is None:
        columns = _checked_columns(episodes, declared, _where(slug))
    metrics, rate_values, passed, total = columns
    measured = _mean(metrics) if metrics else None
    rates: dict[str, float | None] = {
        metric: (_mean(values) if values else None) for metric, values in rate_values.items()
    }
    return EpisodeAggregate(
        measured=measured,
        rates=rates,
        passed=passed,
        total=total,
        pass_rate=passed / total if total else None,
    )


def _mean(values: list[float]) -> float:
    """The mean of finite ``values``, summed exactly (``math.fsum``).

    The sum of finite values can exceed a double (two episodes reporting 1.7e308), and fsum then
    raises OverflowError: a bundle crashed its verification. Their mean cannot (it lies between
    their least and greatest), so only then are the values divided first and summed again; every
    other input keeps the exact sum's result, bit for bit."""
    try:
        return math.fsum(values) / len(values)
    except OverflowError:
        count = len(values)
        return math.fsum(value / count for value in values)


# (non-null metrics, declared metric -> its rates, passed, total), in episode order.
_Columns = tuple[list[float], dict[str, list[float]], int, int]
_episode_aborted = operator.attrgetter("aborted")
_episode_metric = operator.attrgetter("metric")
_episode_rates = operator.attrgetter("rates")


def _plain_columns(episodes: Sequence[Episode], declared: list[str]) -> _Columns | None:
    """:func:`_checked_columns`'s result when every episode is plainly valid (a bool ``aborted``,
    a finite float or None ``metric``, a dict of finite floats >= 0 ``rates``), else None."""
    try:
        aborted = list(map(_episode_aborted, episodes))
        metric_column = list(map(_episode_metric, episodes))
        rate_maps = list(map(_episode_rates, episodes))
    except AttributeError:
        return None  # not an Episode: the loop says which
    if set(map(type, aborted)) != {bool} or set(map(type, rate_maps)) != {dict}:
        return None
    metrics = [value for value in metric_column if value is not None]
    if metrics and (set(map(type, metrics)) != {float} or not all(map(math.isfinite, metrics))):
        return None
    every_rate = list(itertools.chain.from_iterable(map(dict.values, rate_maps)))
    if every_rate and (
        set(map(type, every_rate)) != {float} or not all(map(math.isfinite, every_rate)) or min(every_rate) < 0
    ):
        return None
    rate_values = {metric: [rates[metric] for rates in rate_maps if metric in rates] for metric in declared}
    return metrics, rate_values, aborted.count(False), len(aborted)


def _checked_columns(episodes: Iterable[Episode], declared: list[str], where: str) -> _Columns:
    metrics: list[float] = []
    rate_values: dict[str, list[float]] = {metric: [] for metric in declared}
    total = 0
    passed = 0
    for index, episode in enumerate(episodes):
        total += 1
        if not isinstance(episode.aborted, bool):
            raise fail(where, f"episodes[{index}].aborted", "a bool", episode.aborted)
        if not episode.aborted:
            passed += 1
        # Fast path for the common case (a finite float); anything else goes through the
        # validators, which build the field name and the exact error message. The field
        # name is an f-string, so it is only formatted when a value needs checking.
        metric_value = episode.metric
        if metric_value is not None:
            if type(metric_value) is float and math.isfinite(metric_value):
                metrics.append(metric_value)
            else:
                metrics.append(finite(where, f"episodes[{index}].metric", metric_value))
        if not isinstance(episode.rates, Mapping):
            raise fail(where, f"episodes[{index}].rates", "a mapping of metric name to rate", episode.rates)
        for metric, rate in episode.rates.items():
            if type(rate) is float and math.isfinite(rate) and rate >= 0:
                checked = rate
            else:
                checked = non_negative(where, f"episodes[{index}].rates[{metric!r}]", rate)
            if metric in rate_values:
                rate_values[metric].append(checked)
    return metrics, rate_values, passed, total


# ---------------------------------------------------------------- whole runs


@dataclass(frozen=True)
class TaskSpec:
    """A task's scoring contract, as synced from the release manifest."""

    slug: str
    genre: str
    direction: str
    paper_value: float
    cap: float = DEFAULT_CAP
    penalties: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = _where(_check_slug("task", self.slug))
        _check_choice(where, "genre", self.genre, GENRES)
        _check_choice(where, "direction", self.direction, DIRECTIONS)
        positive(where, "paper_value", self.paper_value)
        at_least(where, "cap", self.cap, 1.0)
        for metric, limit in self.penalties.items():
            if not isinstance(metric, str) or not metric:
                raise fail(where, "penalties", "keyed by non-empty metric names", metric)
            positive(where, f"penalties[{metric!r}].limit", limit)


@dataclass(frozen=True)
class ReleaseSpec:
    """The required task set of a release and its missing-task policy."""

    tasks: Mapping[str, TaskSpec]
    missing_task_policy: str = EXCLUDE

    def __post_init__(self) -> None:
        _check_choice("release", "missing_task_policy", self.missing_task_policy, MISSING_TASK_POLICIES)
        for key, spec in self.tasks.items():
            if not isinstance(spec, TaskSpec) or spec.slug != key:
                raise fail("release", f"tasks[{key!r}]", f"a TaskSpec with slug {key!r}", spec)

    @property
    def required_task_set_hash(self) -> str:
        """:func:`required_task_set_hash` of this release's task slugs."""
        return required_task_set_hash(self.tasks)


@dataclass(frozen=True)
class TaskResult:
    """What the evaluator and the faithfulness judge returned for one task."""

    episodes: Sequence[Episode]
    faithful: bool | None = None


@dataclass(frozen=True)
class TaskBreakdown:
    """One entry of ``score_breakdown.json``'s ``tasks`` object."""

    measured: float
    gap: float
    penalties: dict[str, float]
    factor: float
    score: float
    final: float
    pass_rate: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, keys in the breakdown's order."""
        return {
            "measured": self.measured,
            "gap": self.gap,
            "penalties": dict(self.penalties),
            "factor": self.factor,
            "score": self.score,
            "final": self.final,
            "pass_rate": self.pass_rate,
        }


@dataclass(frozen=True)
class RunBreakdown:
    """The recomputed score of a whole run."""

    tasks: dict[str, TaskBreakdown]
    overall: float | None
    reproduction: float | None
    open: float | None
    pass_rate: float | None
    coverage: Coverage

    def to_dict(self) -> dict[str, Any]:
        """Exactly the shape of a bundle's ``score_breakdown.json``."""
        return {
            "tasks": {slug: self.tasks[slug].to_dict() for slug in sorted(self.tasks)},
            "aggregates": {
                "overall": self.overall,
                "reproduction": self.reproduction,
                "open": self.open,
                "pass_rate": self.pass_rate,
                "coverage": self.coverage.to_dict(),
            },
        }


def category_scores(release: ReleaseSpec, finals: Mapping[str, float]) -> dict[str, float | None]:
    """Overall / Reproduction / Open scores of one row (seed 000 "categories").

    ``finals`` maps covered task slugs to their final scores.  Each category
    is :func:`macro_mean` with the release's policy over the release's
    required tasks of that genre (a task absent from ``finals`` is missing);
    Overall is the same over every required task.  A category with no
    required task, or nothing to average, is None.
    """
    for slug in finals:
        if slug not in release.tasks:
            raise fail("run", "task", "a slug of the release's required task set", slug)
    policy = release.missing_task_policy
    by_genre: dict[str, list[float | None]] = {genre: [] for genre in GENRES}
    everything: list[float | None] = []
    for slug in sorted(release.tasks):
        value = finals.get(slug)
        by_genre[release.tasks[slug].genre].append(value)
        everything.append(value)
    result: dict[str, float | None] = {"overall": macro_mean(everything, policy=policy, where="run overall")}
    for genre in GENRES:
        result[genre] = macro_mean(by_genre[genre], policy=policy, where=f"run {genre}")
    return result


def score_run(release: ReleaseSpec, results: Mapping[str, TaskResult]) -> RunBreakdown:
    """Recompute a run from the evaluator results (the authoritative score).

    A task is *covered* when its result yields a measured value (see
    :func:`aggregate_episodes`); uncovered tasks are missing and handled by
    the release's missing-task policy.  The run's pass rate is pooled over
    every evaluator episode of every submitted task, covered or not.
    A result for a task outside the release raises :class:`ScoringError`.
    """
    for slug in results:
        if slug not in release.tasks:
            raise ScoringError(f"run: result for task {slug!r} is not in the release's required task set")
    tasks: dict[str, TaskBreakdown] = {}
    passed = 0
    total = 0
    for slug in sorted(results):
        spec = release.tasks[slug]
        result = results[slug]
        aggregate = aggregate_episodes(result.episodes, spec.penalties, slug=slug)
        passed += aggregate.passed
        total += aggregate.total
        if aggregate.measured is None:
            continue
        scored = task_score(
            measured=aggregate.measured,
            paper_value=spec.paper_value,
            direction=spec.direction,
            cap=spec.cap,
            penalties=spec.penalties,
            rates=aggregate.rates,
            genre=spec.genre,
            faithful=result.faithful,
            slug=slug,
        )
        tasks[slug] = TaskBreakdown(
            measured=aggregate.measured,
            gap=scored.gap,
            penalties=scored.factors,
            factor=scored.factor,
            score=scored.score,
            final=scored.final,
            pass_rate=aggregate.pass_rate,
        )
    categories = category_scores(release, {slug: entry.final for slug, entry in tasks.items()})
    return RunBreakdown(
        tasks=tasks,
        overall=categories["overall"],
        reproduction=categories[REPRODUCTION],
        open=categories[OPEN],
        pass_rate=passed / total if total else None,
        coverage=coverage(tasks, release.tasks),
    )
