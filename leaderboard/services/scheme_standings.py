"""Precomputed standings of the scorecard (seed 001) and race (seed 002) schemes.

Pages never aggregate per request. What a new result changes, and only that,
is rewritten:

* scorecards: ``scorecard_standing_update(release=, agent_id=)`` -- call it when
  one of an agent's cards closes (or changes level or privacy): it recomputes
  that agent's best card and moves only the rows whose rank changes;
* races: ``race_standings_update(race=)`` -- a race's field baseline (the
  median) moves with every run, so that race's results are recomputed, and
  Overall from that race on; earlier races are read, never rewritten.

The ``*_refresh`` functions rebuild a whole release / benchmark from the run
rows alone, for repairs (``manage.py rebuild_standings``); running them twice,
or after a crash half-way (inside their transaction), lands on the same rows.
"""

from __future__ import annotations

from collections import defaultdict

from django.db import transaction
from django.db.models import F

from leaderboard.models import Benchmark, Race, RaceRun, Release, ScorecardRun
from leaderboard.models.races import OverallStanding, RaceResult, ScorecardStanding
from leaderboard.services.standings import LEADERBOARD_LEVELS
from scoring import race as race_scoring
from scoring import scorecard as scorecard_scoring

# Races that have started count; a scheduled race has no results yet.
STARTED_STATUSES = (Race.Status.RUNNING, Race.Status.EMBARGOED, Race.Status.RELEASED)


def scorecard_from_run(run: ScorecardRun) -> scorecard_scoring.Scorecard:
    """The scoring view of a stored scorecard (the numbers the server closed)."""
    return scorecard_scoring.Scorecard(
        episodes=run.episodes,
        solved=run.solved,
        success_rate=run.success_rate,
        move_efficiency=run.move_efficiency,
        avg_steps_solved=run.avg_steps_solved,
        deadlock_rate=run.deadlock_rate,
        total_actions=run.total_actions,
    )


def _entrant_key(agent_id: int) -> str:
    # scoring.best_per_entrant breaks exact ties by entrant id as a string;
    # zero-padding keeps that order numeric (the older agent first).
    return f"{agent_id:012d}"


@transaction.atomic
def scorecard_standings_refresh(*, release: Release) -> int:
    """Rewrite a scorecard release's board: each agent's best card, ranked
    success desc, efficiency desc, deadlock asc (scoring.scorecard.rank_key).
    Returns the number of ranked agents."""
    # Serialize refreshes of one release: two verifications finishing together would
    # otherwise both delete and both re-insert the same rows.
    Release.objects.select_for_update().filter(pk=release.pk).first()
    runs = (
        # Only cards played on the server rank (submissions.services.cards); rows left by the
        # retired self-reported bundle kind have no card and never do.
        ScorecardRun.objects.filter(release=release, level__in=LEADERBOARD_LEVELS, card__isnull=False)
        .select_related("agent_version")
        .order_by("created_at", "id")
    )
    by_key: dict[tuple[str, int], ScorecardRun] = {}
    cards = []
    for run in runs:
        key = _entrant_key(run.agent_version.agent_id)
        card = scorecard_from_run(run)
        # best_per_entrant returns the very card objects it was given: remember each one's row.
        by_key[(key, id(card))] = run
        cards.append((key, card))
    ranked = scorecard_scoring.best_per_entrant(cards)
    ScorecardStanding.objects.filter(release=release).delete()
    ScorecardStanding.objects.bulk_create(
        ScorecardStanding(
            release=release,
            agent_id=int(key),
            scorecard=by_key[(key, id(card))],
            rank=position,
        )
        for position, (key, card) in enumerate(ranked, start=1)
    )
    Release.objects.filter(pk=release.pk).update(generation=F("generation") + 1)
    return len(ranked)


def _agent_best_card(release: Release, agent_id: int) -> ScorecardRun | None:
    """An agent's best public card on a release (the first of equal cards, as the rebuild keeps)."""
    best: tuple[tuple[float, int, float, float, int, float, int], ScorecardRun] | None = None
    for run in ScorecardRun.objects.filter(
        release=release,
        agent_version__agent_id=agent_id,
        level__in=LEADERBOARD_LEVELS,
        # Only cards played on the server rank, exactly as in scorecard_standings_refresh.
        card__isnull=False,
    ).order_by("created_at", "id"):
        key = scorecard_scoring.rank_key(scorecard_from_run(run))
        if best is None or key < best[0]:
            best = (key, run)
    return None if best is None else best[1]


@transaction.atomic
def scorecard_standing_update(*, release: Release, agent_id: int) -> int:
    """Bring one agent's row of a scorecard release's board up to date (after one of its cards
    closed, or changed level or privacy); returns how many rows were written.

    Only that agent's cards are scored; the other rows are read (one per agent, never their
    cards) to place it, and only rows whose rank changes are written. The generation moves
    only when the board does. Same rows as ``scorecard_standings_refresh``.
    """
    Release.objects.select_for_update().filter(pk=release.pk).values_list("pk", flat=True).first()
    best = _agent_best_card(release, agent_id)
    rows = {row.agent_id: row for row in ScorecardStanding.objects.filter(release=release).select_related("scorecard")}
    mine = rows.get(agent_id)
    if mine is not None and best is not None and mine.scorecard_id == best.pk:
        return 0
    written = 0
    if mine is not None:
        del rows[agent_id]
        if best is None:
            mine.delete()
            written += 1
    cards = {key: scorecard_from_run(row.scorecard) for key, row in rows.items()}
    if best is not None:
        cards[agent_id] = scorecard_from_run(best)
    ordered = sorted(cards, key=lambda key: (scorecard_scoring.rank_key(cards[key]), _entrant_key(key)))
    moved = []
    for rank, key in enumerate(ordered, start=1):
        if key == agent_id:
            assert best is not None  # the agent is among the ranked cards only with a best card
            if mine is None or mine.pk is None:
                ScorecardStanding.objects.create(release=release, agent_id=agent_id, scorecard=best, rank=rank)
            else:
                ScorecardStanding.objects.filter(pk=mine.pk).update(scorecard=best, rank=rank)
            written += 1
        elif rows[key].rank != rank:
            rows[key].rank = rank
            moved.append(rows[key])
    ScorecardStanding.objects.bulk_update(moved, ["rank"])
    written += len(moved)
    if written:
        Release.objects.filter(pk=release.pk).update(generation=F("generation") + 1)
    return written


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
    for run in RaceRun.objects.filter(race=race).select_related("agent_version__agent").order_by("id"):
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
    ordered = sorted(raw, key=lambda version_id: (-raw[version_id][0], names[version_id], version_id))
    return [
        RaceResult(
            race=race,
            agent_version_id=version_id,
            raw_score=raw[version_id][0],
            rank=position,
            baseline=baseline,
            delta=race_scoring.race_delta(raw[version_id][0], baseline),
            runs_included=raw[version_id][1],
            runs_excluded=raw[version_id][2],
        )
        for position, version_id in enumerate(ordered, start=1)
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
        ordered = sorted(overalls, key=lambda version_id: (-overalls[version_id][0], version_id))
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
            for rank, version_id in enumerate(ordered, start=1)
        )
