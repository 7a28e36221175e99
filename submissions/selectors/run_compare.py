"""Two paper-gap runs side by side, per task and per aggregate.

Both runs are read through the run page's own selector (leaderboard.selectors.paper_gap.run_get:
a private run exists only for its submitter and staff) and shown through the run page's
rule (leaderboard.disclosure), each for the same viewer. A difference is given only when
both of its values are shown: a difference with one hidden side would give the hidden one
away. Intervals: the aggregates carry the runs' bootstrap intervals; each task's final
score gets its own bootstrap interval over the run's stored episodes
(submissions.selectors.run_bundle.task_intervals, cached per bundle; none while a bundle
cannot be read), and the pass rates their Wilson intervals (scoring.proportion).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import Http404

from leaderboard.api_query import whole_number
from leaderboard.disclosure import run_disclosure
from leaderboard.models import Run
from leaderboard.selectors.paper_gap import run_get
from leaderboard.users import Viewer
from scoring.proportion import intervals_overlap, wilson_interval
from submissions.selectors.run_bundle import task_intervals

AGGREGATES: tuple[tuple[str, str], ...] = (
    ("overall", "Overall"),
    ("reproduction", "Reproduction"),
    ("open", "Open-ended"),
)


class CompareQueryError(ValueError):
    """The compare querystring names no two runs, or runs that cannot be compared."""


@dataclass(frozen=True)
class Side:
    """One run's value in one row, as the viewer may see it."""

    value: float | None
    hidden: bool
    interval: tuple[float, float] | None = None
    present: bool = True  # False: the run has no result for this task


@dataclass(frozen=True)
class CompareRow:
    key: str
    label: str
    genre: str
    a: Side
    b: Side
    # b - a, only when both values are shown.
    difference: float | None
    # Whether the two intervals share a point (None: an interval is unknown or hidden).
    overlap: bool | None
    pass_a: Side | None = None
    pass_b: Side | None = None
    pass_difference: float | None = None
    pass_overlap: bool | None = None

    def record(self) -> dict[str, Any]:
        def side(s: Side | None) -> dict[str, Any] | None:
            if s is None:
                return None
            return {
                "value": s.value,
                "withheld": s.hidden,
                "present": s.present,
                "interval": list(s.interval) if s.interval else None,
            }

        return {
            "key": self.key,
            "label": self.label,
            "genre": self.genre,
            "a": side(self.a),
            "b": side(self.b),
            "difference": self.difference,
            "intervals_overlap": self.overlap,
            "pass_rate_a": side(self.pass_a),
            "pass_rate_b": side(self.pass_b),
            "pass_rate_difference": self.pass_difference,
            "pass_rate_intervals_overlap": self.pass_overlap,
        }


@dataclass(frozen=True)
class Comparison:
    a: Run
    b: Run
    aggregates: list[CompareRow]
    tasks: list[CompareRow]
    same_release: bool


def _run_id(params: Any, name: str) -> int:
    raw = params.get(name) or ""
    if not raw:
        raise CompareQueryError(f"{name}: missing; expected a run id (e.g. ?a=12&b=34)")
    value = whole_number(raw, minimum=1)
    if value is None:
        raise CompareQueryError(f"{name}={raw[:24]!r}: expected a run id (a positive whole number)")
    return value


def compare_ids_from_params(params: Any) -> tuple[int, int]:
    """(a, b) run ids from the querystring; raises CompareQueryError naming the bad one."""
    first, second = _run_id(params, "a"), _run_id(params, "b")
    if first == second:
        raise CompareQueryError(f"a and b are the same run ({first}); expected two different runs")
    return first, second


def _difference(a: Side, b: Side) -> float | None:
    if a.value is None or b.value is None or a.hidden or b.hidden:
        return None
    return b.value - a.value


def _overlap(a: Side, b: Side) -> bool | None:
    if a.hidden or b.hidden:
        return None
    return intervals_overlap(a.interval, b.interval)


def run_compare(*, a_id: int, b_id: int, user: Viewer | None) -> Comparison:
    """The comparison of runs ``a_id`` and ``b_id`` for ``user``; Http404 when either run is
    not visible to them (the same answer as for a run that does not exist), and
    CompareQueryError when the runs belong to different benchmarks."""
    try:
        a = run_get(run_id=a_id, user=user)
        b = run_get(run_id=b_id, user=user)
    except Http404:
        raise Http404("No such run") from None
    if a.release.benchmark_id != b.release.benchmark_id:
        raise CompareQueryError(
            f"runs {a.pk} and {b.pk} belong to different benchmarks "
            f"({a.release.benchmark.slug}, {b.release.benchmark.slug}); expected two runs of one benchmark"
        )
    results_a = list(a.task_results.all())
    results_b = list(b.task_results.all())
    disclosure_a = run_disclosure(a, user=user, task_results=results_a)
    disclosure_b = run_disclosure(b, user=user, task_results=results_b)
    confidence_a = disclosure_a.confidence(a.confidence)
    confidence_b = disclosure_b.confidence(b.confidence)

    def aggregate_side(run: Run, disclosure: Any, confidence: dict[str, Any], key: str) -> Side:
        hidden = key in disclosure.aggregates_hidden
        ci = confidence.get(key)
        interval = (float(ci[0]), float(ci[1])) if isinstance(ci, list | tuple) and len(ci) == 2 else None
        # disclosure.aggregate: None when hidden, display precision when it includes a task
        # whose final this viewer may not see (the same as the run page).
        value = disclosure.aggregate(key, getattr(run, key))
        return Side(value=value, hidden=hidden, interval=None if hidden else interval)

    aggregates = []
    for key, label in AGGREGATES:
        side_a = aggregate_side(a, disclosure_a, confidence_a, key)
        side_b = aggregate_side(b, disclosure_b, confidence_b, key)
        if side_a.value is None and side_b.value is None and not (side_a.hidden or side_b.hidden):
            continue  # neither run has this genre
        aggregates.append(
            CompareRow(
                key=key,
                label=label,
                genre="",
                a=side_a,
                b=side_b,
                difference=_difference(side_a, side_b),
                overlap=_overlap(side_a, side_b),
            )
        )

    by_slug_a = {r.release_task.task.slug: r for r in results_a}
    by_slug_b = {r.release_task.task.slug: r for r in results_b}
    order = list(by_slug_a) + [slug for slug in by_slug_b if slug not in by_slug_a]
    missing = Side(value=None, hidden=False, present=False)
    intervals_a = task_intervals(run=a)
    intervals_b = task_intervals(run=b)

    def task_sides(result: Any, disclosure: Any, intervals: dict[str, Any]) -> tuple[Side, Side]:
        if result is None:
            return missing, missing
        slug = result.release_task.task.slug
        hidden = disclosure.task_scores_hidden(slug)
        # The interval only where the final score itself is shown.
        final = Side(
            value=None if hidden else result.final, hidden=hidden, interval=None if hidden else intervals.get(slug)
        )
        passed = Side(value=result.pass_rate, hidden=False, interval=wilson_interval(result.pass_rate, result.episodes))
        return final, passed

    tasks = []
    for slug in order:
        result_a, result_b = by_slug_a.get(slug), by_slug_b.get(slug)
        final_a, pass_a = task_sides(result_a, disclosure_a, intervals_a)
        final_b, pass_b = task_sides(result_b, disclosure_b, intervals_b)
        reference = result_a or result_b
        assert reference is not None  # `order` lists only slugs that one of the runs has
        tasks.append(
            CompareRow(
                key=slug,
                label=reference.release_task.title,  # the release's snapshot, as the run page shows it
                genre=reference.release_task.genre,
                a=final_a,
                b=final_b,
                difference=_difference(final_a, final_b),
                overlap=_overlap(final_a, final_b),
                pass_a=pass_a,
                pass_b=pass_b,
                pass_difference=_difference(pass_a, pass_b),
                pass_overlap=_overlap(pass_a, pass_b),
            )
        )
    return Comparison(a=a, b=b, aggregates=aggregates, tasks=tasks, same_release=a.release_id == b.release_id)
