"""Precomputed standings of the race scheme (seed 002).

Pages never aggregate per request. A race's field baseline (the median) moves with
every run, so ``race_standings_update(race=)`` recomputes that race's results, and
Overall from that race on; earlier races are read, never rewritten.
``race_standings_refresh`` rebuilds a whole benchmark from the run rows alone, for
repairs (``manage.py rebuild_standings``); running it twice, or after a crash
half-way (inside its transaction), lands on the same rows.
"""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction

from leaderboard.models import Benchmark, Race, RaceRun
from leaderboard.models.races import OverallStanding, RaceResult
from scoring import race as race_scoring

# Races that have started count; a scheduled race has no results yet.
STARTED_STATUSES = (Race.Status.RUNNING, Race.Status.EMBARGOED, Race.Status.RELEASED)


def _run_score(run: RaceRun) -> race_scoring.RunScore:
    return race_scoring.RunScore(
        status=run.status,
        score=run.score if run.status == race_scoring.RUN_OK else None,
        expected=run.expected_tasks,
        infrastructure_errors=run.infrastructure_errors,
    )


def _race_results(race: Race) -> list[RaceResult]:
    """Layers 2 and 3 of seed 002 for one race: raw scores, field baseline, deltas."""
    runs_by_version: dict[int, list[RaceRun]] = defaultdict(list)
    names: dict[int, str] = {}
    # Runs staff excluded (leaderboard.services.race_exclusions) count nowhere: not in a raw
    # score, so not in the field baseline either, nor in the Overall built from these results.
    counted = RaceRun.objects.filter(race=race, excluded_at__isnull=True)
    for run in counted.select_related("agent_version__agent").order_by("id"):
        runs_by_version[run.agent_version_id].append(run)
        names[run.agent_version_id] = str(run.agent_version)
    raw: dict[int, tuple[float, int, int]] = {}
    for version_id, runs in runs_by_version.items():
        score = race_scoring.race_score(_run_score(run) for run in runs)
        if score is None:
            continue  # every run failed or was an infrastructure failure: nothing to rank yet
        included = sum(1 for run in runs if run.status == race_scoring.RUN_OK)
        raw[version_id] = (score, included, len(runs) - included)
    baseline = race_scoring.field_baseline(value[0] for value in raw.values())
    # Listed by score, then name; ranked by score alone (equal raw scores share a rank).
    ordered = sorted(
        raw, key=lambda version_id: (-race_scoring.tie_key(raw[version_id][0]), names[version_id], version_id)
    )
    ranks = race_scoring.competition_ranks([raw[version_id][0] for version_id in ordered])
    return [
        RaceResult(
            race=race,
            agent_version_id=version_id,
            raw_score=raw[version_id][0],
            rank=rank,
            baseline=baseline,
            delta=race_scoring.race_delta(raw[version_id][0], baseline),
            runs_included=raw[version_id][1],
            runs_excluded=raw[version_id][2],
        )
        for rank, version_id in zip(ranks, ordered, strict=True)
        if baseline is not None
    ]


def _version_key(version_id: int) -> str:
    return f"{version_id:012d}"


@transaction.atomic
def race_standings_refresh(*, benchmark: Benchmark) -> None:
    """Recompute every started race of a race benchmark, in race order (the full rebuild).

    Races are numbered by their position among started races (1, 2, ...), so
    scoring.race.overall sees a contiguous sequence. The launch race is the
    latest started race flagged is_launch (or the first started race): Overall
    starts fresh there (the ramp) and earlier races are never back-filled. A
    version's history is restricted to the rolling window ending at the anchor
    race, so races it missed in that window count at delta 0 (the damping).
    The top spot passes from race to race and changes hands only when a
    challenger beats the holder by more than that race's challenge_margin.
    """
    _race_standings_from(benchmark, first=None)


@transaction.atomic
def race_standings_update(*, race: Race | None) -> None:
    """What a result of ``race`` (or its start) changes, and only that: its results (its field
    baseline moves with every run) and Overall from that race on. Earlier races' rows are read
    (their results feed the rolling window, their top spot the hand-over), never rewritten.
    Same rows as ``race_standings_refresh``. None (a qualifying run, outside any race): no race
    board changes."""
    if race is not None:
        _race_standings_from(race.benchmark, first=race)


def _window_overalls(
    entries: dict[int, list[race_scoring.RaceEntry]], *, position: int, launch_position: int
) -> dict[int, tuple[float, int]]:
    """Each agent version's Overall after race ``position`` and the races it counted."""
    window_start = max(launch_position, position - race_scoring.OVERALL_WINDOW + 1)
    overalls: dict[int, tuple[float, int]] = {}
    for version_id, history in entries.items():
        in_window = [entry for entry in history if entry.race >= window_start]
        if not in_window:
            continue  # has not raced in the current window: off the Overall board
        value = race_scoring.overall(in_window, current_race=position, launch_race=launch_position)
        if value is not None:
            overalls[version_id] = (value, len(in_window))
    return overalls


def _race_standings_from(benchmark: Benchmark, *, first: Race | None) -> None:
    # One writer per benchmark at a time (see scorecard_standing_update).
    Benchmark.objects.select_for_update().filter(pk=benchmark.pk).first()
    races = list(Race.objects.filter(benchmark=benchmark, status__in=STARTED_STATUSES).order_by("number"))
    start = 0
    if first is not None:
        start = next((index for index, race in enumerate(races) if race.number >= first.number), len(races))
    rewritten = races[start:]
    RaceResult.objects.filter(race__in=rewritten).delete()
    OverallStanding.objects.filter(race__in=rewritten).delete()
    if first is None:
        # A full rebuild also clears what races no longer started (a reverted start) left behind.
        RaceResult.objects.filter(race__benchmark=benchmark).delete()
        OverallStanding.objects.filter(race__benchmark=benchmark).delete()
    kept: dict[int, list[RaceResult]] = defaultdict(list)
    for stored in RaceResult.objects.filter(race__in=races[:start]):
        kept[stored.race_id].append(stored)
    holders = dict(
        OverallStanding.objects.filter(race__in=races[:start], is_top=True).values_list("race_id", "agent_version_id")
    )
    launch_position = 1
    holder: str | None = None
    entries: dict[int, list[race_scoring.RaceEntry]] = defaultdict(list)
    for position, race in enumerate(races, start=1):
        if race.is_launch:
            # A (re-)launch starts Overall fresh: earlier races are not back-filled.
            launch_position = position
            entries.clear()
            holder = None
        if position <= start:
            results = kept[race.pk]
        else:
            results = _race_results(race)
            RaceResult.objects.bulk_create(results)
        for result in results:
            entries[result.agent_version_id].append(
                race_scoring.RaceEntry(race=position, raw_score=result.raw_score, baseline=result.baseline)
            )
        if position <= start:
            top = holders.get(race.pk)
            holder = None if top is None else _version_key(top)
            continue
        window_start = max(launch_position, position - race_scoring.OVERALL_WINDOW + 1)
        span = position - window_start + 1
        overalls = _window_overalls(entries, position=position, launch_position=launch_position)
        holder = race_scoring.top_agent(
            {_version_key(version_id): value for version_id, (value, _) in overalls.items()},
            holder,
            race.challenge_margin,
        )
        ordered = sorted(overalls, key=lambda version_id: (-race_scoring.tie_key(overalls[version_id][0]), version_id))
        ranks = race_scoring.competition_ranks([overalls[version_id][0] for version_id in ordered])
        OverallStanding.objects.bulk_create(
            OverallStanding(
                race=race,
                agent_version_id=version_id,
                overall=overalls[version_id][0],
                rank=rank,
                races_counted=overalls[version_id][1],
                window=span,
                is_top=holder == _version_key(version_id),
            )
            for rank, version_id in zip(ranks, ordered, strict=True)
        )
