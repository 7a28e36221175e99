"""The race lifecycle (seed 002): scheduled -> running -> embargoed -> released.

The Race row is the state machine. A race's hidden task set is pinned before it
starts and frozen from then on; while it runs and during its reveal embargo no
failure category of its episodes leaves the server; releasing it makes its raw
results and categories public. Every step refreshes the benchmark's race
standings, because the Overall page anchors to the running race while one is
live and to the most recent completed race otherwise.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from leaderboard.models import Benchmark, Race, Release
from leaderboard.permissions import ADD_RACE, CHANGE_RACE, staff_write_actor
from leaderboard.services.race_standings import race_standings_update
from leaderboard.users import Viewer


class RaceTransitionError(ValueError):
    """A lifecycle step that does not apply to the race in its current state."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _check_task_ids(task_ids: Any) -> list[str]:
    if not isinstance(task_ids, list) or not task_ids:
        raise RaceTransitionError(
            "race_task_set_empty", "a race needs a non-empty hidden task set (a list of task ids)"
        )
    seen: set[str] = set()
    for index, task_id in enumerate(task_ids):
        if not isinstance(task_id, str) or not task_id.strip():
            raise RaceTransitionError(
                "race_task_set_invalid", f"task_ids[{index}] must be a non-empty string, got {task_id!r}"
            )
        if task_id in seen:
            raise RaceTransitionError("race_task_set_invalid", f"task_ids[{index}] repeats task {task_id!r}")
        seen.add(task_id)
    return list(task_ids)


# How many shared task ids a message names (the rest are counted).
_SHARED_SHOWN = 3


def _shared(shared: set[str], where: str) -> str:
    names = ", ".join(repr(task) for task in sorted(shared)[:_SHARED_SHOWN])
    more = f" and {len(shared) - _SHARED_SHOWN} more" if len(shared) > _SHARED_SHOWN else ""
    return f"task {names} is in {where}" if len(shared) == 1 else f"tasks {names}{more} are in {where}"


def race_task_set_public(*, benchmark: Benchmark, task_ids: list[str]) -> str | None:
    """Why ``task_ids`` cannot be a race's hidden set on ``benchmark``, or None: a task of one of
    its qualifying sets, public from the start (every qualifying run's page names it). Seed 002:
    "A race uses a separate hidden task set pinned to that race"; the race page would call a
    set "hidden" that every visitor can read."""
    wanted = set(task_ids)
    for release in Release.objects.filter(benchmark=benchmark).order_by("pk"):
        public = release.qualifying_task_ids or list(
            release.release_tasks.values_list("task__slug", flat=True)  # expected_task_ids' fallback
        )
        shared = wanted & {str(task) for task in public}
        if shared:
            return (
                _shared(shared, f"the qualifying set of release {release.version}")
                + "; a race's hidden set shares no task with a qualifying set (seed 002)"
            )
    return None


def race_task_set_reused(*, benchmark: Benchmark, task_ids: list[str], race: Race | None = None) -> str | None:
    """A warning, or None: tasks of ``task_ids`` that another race of ``benchmark`` also holds,
    public once that race is released. Not refused: re-holding a race on its own set (a race
    voided by an incident, say) is a maintainer's call; the admin says it when scheduling."""
    wanted = set(task_ids)
    others = Race.objects.filter(benchmark=benchmark).order_by("number")
    for other in others.exclude(pk=race.pk) if race is not None else others:
        shared = wanted & {str(task) for task in other.task_ids}
        if shared:
            return _shared(shared, f"the task set of race {other.number} too (public once that race is released)")
    return None


def race_hidden_tasks_named(*, benchmark: Benchmark, task_ids: list[str]) -> str | None:
    """Why ``task_ids`` cannot be a qualifying set of ``benchmark``, or None: one of them is in
    the hidden set of a race not yet released, which the qualifying runs' pages would show
    (the same rule as race_task_set_public, seen from a manifest sync)."""
    wanted = set(task_ids)
    for race in Race.objects.filter(benchmark=benchmark).exclude(status=Race.Status.RELEASED).order_by("number"):
        shared = wanted & {str(task) for task in race.task_ids}
        if shared:
            return (
                _shared(shared, f"the hidden set of race {race.number} ({race.status})")
                + "; a qualifying set is public, so it holds no task of a race not yet released (seed 002)"
            )
    return None


def _refuse_public(benchmark: Benchmark, task_ids: list[str]) -> None:
    reason = race_task_set_public(benchmark=benchmark, task_ids=task_ids)
    if reason is not None:
        raise RaceTransitionError("race_task_set_public", reason)


def _locked(race: Race) -> Race:
    # Lock the row so two admins pressing the same button cannot both pass the state check.
    return Race.objects.select_for_update().get(pk=race.pk)


def _step(race: Race, *, expected: str, target: str, verb: str) -> Race:
    current = _locked(race)
    if current.status != expected:
        article = "an" if expected[0] in "aeiou" else "a"
        raise RaceTransitionError(
            "race_wrong_state", f"{current} is {current.status}; only {article} {expected} race can be {verb}"
        )
    current.status = target
    return current


@transaction.atomic
def race_schedule(
    *,
    benchmark: Benchmark,
    number: int,
    task_ids: list[str],
    user: Viewer | None = None,
    name: str = "",
    is_launch: bool = False,
    challenge_margin: float = 0.02,
    release: Any = None,
) -> Race:
    """Create a scheduled race with its hidden task set pinned. ``user``: staff holding
    ``leaderboard.add_race`` (None for a script)."""
    staff_write_actor(user, ADD_RACE, doing="schedule races")
    if benchmark.scheme != benchmark.Scheme.RACE:
        raise RaceTransitionError("not_a_race_benchmark", f"benchmark {benchmark.slug!r} is not a race benchmark")
    if not (0 <= challenge_margin <= 1):
        raise RaceTransitionError(
            "race_margin_invalid", f"challenge_margin must be between 0 and 1, got {challenge_margin!r}"
        )
    if Race.objects.filter(benchmark=benchmark, number=number).exists():
        raise RaceTransitionError("race_exists", f"{benchmark.slug} already has a race number {number}")
    started = (
        Race.objects.filter(benchmark=benchmark, number__gt=number)
        .exclude(status=Race.Status.SCHEDULED)
        .order_by("-number")
        .values_list("number", flat=True)
        .first()
    )
    if started is not None:
        # Races are held in their numbers' order: this one could never start (race_out_of_order).
        raise RaceTransitionError(
            "race_out_of_order",
            f"race {number} of {benchmark.slug} could never start: race {started} has started, and races are "
            f"held in their numbers' order; give it a number after {started}",
        )
    if release is not None and release.benchmark_id != benchmark.pk:
        # A race of one benchmark pinned to another's release takes no run (every receipt is
        # race_release_mismatch), and a scheduled race's fields cannot be changed afterwards.
        raise RaceTransitionError(
            "race_release_mismatch",
            f"release {release.version!r} belongs to benchmark {release.benchmark.slug!r}, not {benchmark.slug!r}",
        )
    task_ids = _check_task_ids(task_ids)
    _refuse_public(benchmark, task_ids)
    return Race.objects.create(
        benchmark=benchmark,
        release=release,
        number=number,
        name=name,
        task_ids=task_ids,
        is_launch=is_launch,
        challenge_margin=challenge_margin,
    )


def _check_no_race_running(race: Race) -> None:
    """Refuse to start ``race`` while another race of its benchmark is running.

    Seed 002 has one live race at a time: the Overall view "anchors to the running race while
    one is live" and falls back to the last completed one "between races". With two running,
    which race the view anchors to, and in which order their deltas enter the rolling window,
    would be a choice of race numbers the seed never makes. Scheduling ahead is not refused (a
    scheduled race takes no run and has no dates until it starts), nor is a start while an
    earlier race is under its reveal embargo (it is completed: runs no longer land in it)."""
    # The benchmark row is the lock every standings writer takes (race_standings); taken after
    # the race's own, in their order, it makes two starts of one benchmark's races wait in turn.
    Benchmark.objects.select_for_update().filter(pk=race.benchmark_id).first()
    running = (
        Race.objects.filter(benchmark_id=race.benchmark_id, status=Race.Status.RUNNING)
        .exclude(pk=race.pk)
        .order_by("number")
        .first()
    )
    if running is not None:
        raise RaceTransitionError(
            "race_already_running",
            f"{race} cannot start while race {running.number} of {race.benchmark.slug} is running; close race "
            f"{running.number} first (a benchmark runs one race at a time: the one its Overall view anchors to)",
        )


def _check_started_in_order(race: Race) -> None:
    """Refuse to start ``race`` after a later-numbered race of its benchmark has started.

    The rolling window of seed 002's Overall view takes races in their numbers' order; a race
    started after a later one would enter the window before it and rewrite Overall standings
    already published for the later race. (Called under the benchmark row lock that
    :func:`_check_no_race_running` takes, so two starts see each other.)"""
    later = (
        Race.objects.filter(benchmark_id=race.benchmark_id, number__gt=race.number)
        .exclude(status=Race.Status.SCHEDULED)
        .order_by("-number")  # the highest started: the number to schedule after
        .first()
    )
    if later is not None:
        raise RaceTransitionError(
            "race_out_of_order",
            f"{race} cannot start after race {later.number} of {race.benchmark.slug} has started; races are held in "
            f"their numbers' order (the Overall view's rolling window takes them in that order): schedule it again "
            f"with a number after {later.number}",
        )


@transaction.atomic
def race_start(*, race: Race, user: Viewer | None = None) -> Race:
    """scheduled -> running, while no other race of the benchmark runs. From now on the
    pinned task set cannot change."""
    staff_write_actor(user, CHANGE_RACE, doing="start races")
    current = _step(race, expected=Race.Status.SCHEDULED, target=Race.Status.RUNNING, verb="started")
    _check_no_race_running(current)
    _check_started_in_order(current)
    _check_task_ids(current.task_ids)
    # Again at the start: a release synced since the schedule may have made a task public.
    _refuse_public(current.benchmark, current.task_ids)
    current.starts_at = current.starts_at or timezone.now()
    current.save(update_fields=["status", "starts_at"])
    race_standings_update(race=current)
    return current


@transaction.atomic
def race_close(*, race: Race, user: Viewer | None = None) -> Race:
    """running -> embargoed: results stop landing; the reveal embargo begins."""
    staff_write_actor(user, CHANGE_RACE, doing="close races")
    current = _step(race, expected=Race.Status.RUNNING, target=Race.Status.EMBARGOED, verb="closed")
    current.ends_at = current.ends_at or timezone.now()
    current.save(update_fields=["status", "ends_at"])
    race_standings_update(race=current)
    return current


@transaction.atomic
def race_release(*, race: Race, user: Viewer | None = None) -> Race:
    """embargoed -> released: the raw results and the failure categories become public."""
    staff_write_actor(user, CHANGE_RACE, doing="release races")
    current = _step(race, expected=Race.Status.EMBARGOED, target=Race.Status.RELEASED, verb="released")
    current.released_at = timezone.now()
    current.save(update_fields=["status", "released_at"])
    race_standings_update(race=current)
    return current
