"""Reads for the scorecard (seed 001) and race (seed 002) pages.

Boards read precomputed rows (ScorecardStanding, RaceResult, OverallStanding)
with a fixed number of queries. The one rule every caller relies on: a race
episode's failure category leaves this module only through
:func:`race_outcomes_visible`, which blanks it (and everything that would
reveal it) until the race is released. Qualifying episodes are never embargoed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Prefetch
from django.http import Http404

from leaderboard.models import AgentVersion, Benchmark, Race, Release
from leaderboard.models.races import OverallStanding, RaceResult, ScorecardStanding
from leaderboard.users import Viewer
from scoring import race as race_scoring
from submissions.models import CardEpisode, CardMove, RaceRun, RaceTaskOutcome, ScorecardRun

FAILURE_MESSAGES: dict[str, str] = {category.code: category.message for category in race_scoring.FAILURE_CATEGORIES}
EMBARGO_NOTE = "Under embargo until the race result is released"

# ----------------------------------------------------------------- scorecards

MAX_ID = 2**63 - 1


def _benchmark(slug: str, scheme: str) -> Benchmark:
    benchmark = Benchmark.objects.filter(slug=slug, scheme=scheme).first()
    if benchmark is None:
        raise Http404(f"No {scheme} benchmark {slug!r}")
    return benchmark


def scorecard_release_current(*, benchmark_slug: str) -> Release:
    """The newest published release of a scorecard benchmark."""
    benchmark = _benchmark(benchmark_slug, Benchmark.Scheme.SCORECARD)
    release = benchmark.releases.filter(published=True).order_by("-published_at", "-id").first()
    if release is None:
        raise Http404(f"{benchmark.name} has no published release yet")
    return release


def scorecard_release_get(*, benchmark_slug: str, version: str) -> Release:
    release = (
        Release.objects.select_related("benchmark")
        .filter(
            benchmark__slug=benchmark_slug,
            benchmark__scheme=Benchmark.Scheme.SCORECARD,
            version=version,
            published=True,
        )
        .first()
    )
    if release is None:
        raise Http404(f"No published release {version!r} of {benchmark_slug!r}")
    return release


@dataclass(frozen=True)
class ScorecardRow:
    rank: int
    agent_name: str
    agent_slug: str
    version: str
    card: ScorecardRun

    @property
    def path_ratio(self) -> float | None:
        """1 / move_efficiency: how many times the optimal path a solve took, on average."""
        efficiency = self.card.move_efficiency
        return 1 / efficiency if efficiency else None


def scorecard_board(*, release: Release) -> list[ScorecardRow]:
    """Each agent's best card on the release, in rank order (one query)."""
    standings = (
        ScorecardStanding.objects.filter(release=release)
        .select_related("agent", "scorecard__agent_version")
        .order_by("rank")
    )
    return [
        ScorecardRow(
            rank=row.rank,
            agent_name=row.agent.name,
            agent_slug=row.agent.slug,
            version=row.scorecard.agent_version.version,
            card=row.scorecard,
        )
        for row in standings
    ]


def scorecard_get(*, pk: int, user: Viewer | None = None) -> ScorecardRun:
    """A closed card by its card id (the id the play API answers). Open cards have no page:
    their episodes are still being played."""
    if pk > MAX_ID:  # beyond a bigint the database would raise instead of finding nothing
        raise Http404("No such scorecard")
    card = (
        ScorecardRun.objects.select_related("release__benchmark", "agent_version__agent", "card")
        .filter(card_id=pk)
        .first()
    )
    if card is None:
        raise Http404("No such scorecard")
    return card


@dataclass(frozen=True)
class EpisodeRow:
    level_id: str
    steps: int
    max_steps: int
    solved: bool
    deadlocked: bool
    out_of_budget: bool
    abandoned: bool
    restarts: int


def scorecard_episodes(*, card: ScorecardRun) -> list[EpisodeRow]:
    """The levels the card played, in play order (unplayed levels are padding, not rows)."""
    from scoring.scorecard import step_budget

    if card.card_id is None:  # closed from a retired self-reported bundle: no recorded episodes
        return []
    rows = CardEpisode.objects.filter(card_id=card.card_id).select_related("level").order_by("started_at", "id")
    return [
        EpisodeRow(
            level_id=row.level.level_id,
            steps=row.steps,
            max_steps=step_budget(row.level.optimal_len),
            solved=row.solved,
            deadlocked=row.deadlocked,
            out_of_budget=row.out_of_budget,
            abandoned=row.abandoned,
            restarts=row.restarts,
        )
        for row in rows
    ]


def _may_see_moves(card: ScorecardRun, user: Viewer | None) -> bool:
    """Who sees an episode's actions while the hidden set is not revealed: the card's
    player (who sent them) and staff. Anyone else would get a tested solution of a
    hidden level, which is as good as its layout."""
    if card.release.reveal_hidden_levels:
        return True
    if user is None or not user.is_authenticated:
        return False
    return bool(user.is_staff or (card.card is not None and user.pk == card.card.owner_id))


def scorecard_replay(*, card: ScorecardRun, level_id: str, user: Viewer | None = None) -> dict[str, Any]:
    """What the replay page draws (docs/schemes.md "Replay").

    ``layout`` (walls, goals, start) only when the operator revealed the release's
    hidden set (Release.reveal_hidden_levels); the card is closed by construction
    (only closed cards have a ScorecardRun). ``moves`` always carries step numbers,
    server times and where the episode was solved or deadlocked; the action and its
    result only for a viewer allowed by :func:`_may_see_moves`."""
    from scoring.sokoban import parse_xsb

    episode = (
        CardEpisode.objects.filter(card_id=card.card_id, level__level_id=level_id).select_related("level").first()
        if card.card_id is not None
        else None
    )
    if episode is None:
        raise Http404("This card did not play that level")
    show_moves = _may_see_moves(card, user)
    layout = None
    if card.release.reveal_hidden_levels:
        level = parse_xsb(episode.level.xsb)
        layout = {
            "width": level.width,
            "height": level.height,
            "walls": sorted(level.walls),
            "goals": sorted(level.goals),
            "player": level.start.player,
            "crates": list(level.start.crates),
        }
    moves = [
        {
            "seq": move.seq,
            "step": move.step,
            "action": move.action if show_moves else None,
            "result": move.result if show_moves or move.result == "reset" else None,
            "solved": move.solved,
            "deadlocked": move.deadlocked,
            "at": move.at.isoformat(),
        }
        for move in CardMove.objects.filter(episode=episode).order_by("seq")
    ]
    return {
        "episode": episode,
        "layout": layout,
        "moves": moves,
        "show_moves": show_moves,
        "level_id": level_id,
    }


@dataclass(frozen=True)
class ScorecardReading:
    """The numbers of seed 001's "Reading a scorecard" paragraph."""

    solved: int
    episodes: int
    success_rate: float
    move_efficiency: float | None
    path_ratio: float | None
    deadlock_rate: float
    best_rank: int | None


def scorecard_reading(*, card: ScorecardRun) -> ScorecardReading:
    standing = ScorecardStanding.objects.filter(scorecard=card).values_list("rank", flat=True).first()
    efficiency = card.move_efficiency
    return ScorecardReading(
        solved=card.solved,
        episodes=card.episodes,
        success_rate=card.success_rate,
        move_efficiency=efficiency,
        path_ratio=1 / efficiency if efficiency else None,
        deadlock_rate=card.deadlock_rate,
        best_rank=standing,
    )


# ---------------------------------------------------------------------- races


def race_benchmark_get(*, benchmark_slug: str) -> Benchmark:
    return _benchmark(benchmark_slug, Benchmark.Scheme.RACE)


def races_of(*, benchmark: Benchmark) -> list[Race]:
    return list(Race.objects.filter(benchmark=benchmark).order_by("-number"))


def race_get(*, benchmark: Benchmark, number: int) -> Race:
    race = Race.objects.filter(benchmark=benchmark, number=number).select_related("benchmark").first()
    if race is None:
        raise Http404(f"{benchmark.name} has no race {number}")
    return race


ANCHOR_STATUSES = (Race.Status.RUNNING, Race.Status.EMBARGOED, Race.Status.RELEASED)


def pick_race_anchor(races: Iterable[Race]) -> Race | None:
    """Of one benchmark's races, the one the Overall view anchors to: the running
    race while one is live, else the most recent completed (embargoed or released)."""
    candidates = [race for race in races if race.status in ANCHOR_STATUSES]
    running = [race for race in candidates if race.status == Race.Status.RUNNING]
    pool = running or candidates
    return max(pool, key=lambda race: race.number) if pool else None


def race_anchor(*, benchmark: Benchmark) -> Race | None:
    """The race the Overall view anchors to (see pick_race_anchor); one query."""
    return pick_race_anchor(Race.objects.filter(benchmark=benchmark, status__in=ANCHOR_STATUSES))


# ------------------------------------------------------------- the embargo
#
# Seed 002: the raw race score "is the value shown in the race results after the reveal
# embargo ends". Until a race is released, none of its per-race values (raw score, rank,
# field baseline, vs Field, a validator run's score, a per-episode paid reward) is shown
# to anyone but staff and, for one validator run, the account that filed it. The Overall
# that visitors see is the one as of the latest race whose results are public (every
# Overall row after it folds in an embargoed race's delta, from which that delta follows
# by subtraction). Every race page, the home page and the agent pages go through these.


def _is_staff(user: Viewer | None) -> bool:
    return bool(user is not None and getattr(user, "is_authenticated", False) and user.is_staff)


def race_values_visible(race: Race | None, user: Viewer | None = None) -> bool:
    """Whether ``user`` may see a race's raw results: qualifying (no race) and released races
    are public; a running, embargoed or scheduled race's only to staff."""
    return race is None or race.status == Race.Status.RELEASED or _is_staff(user)


def race_run_values_visible(run: RaceRun, user: Viewer | None = None) -> bool:
    """Whether ``user`` may see one validator run's score and paid rewards: as for its race,
    plus the account that filed the run (the validator sees what it reported)."""
    if race_values_visible(run.race, user):
        return True
    return bool(user is not None and getattr(user, "is_authenticated", False) and user.pk == _filer_id(run))


def _filer_id(run: RaceRun) -> Any:
    submission = getattr(run, "submission", None)
    return submission.submitter_id if submission is not None else None


def pick_public_anchor(races: Iterable[Race]) -> Race | None:
    """The latest released race such that every race started before it is released too:
    the newest Overall that folds in no embargoed delta."""
    started = sorted((race for race in races if race.status in ANCHOR_STATUSES), key=lambda race: race.number)
    public = None
    for race in started:
        if race.status != Race.Status.RELEASED:
            break
        public = race
    return public


def race_overall_anchor(*, benchmark: Benchmark, user: Viewer | None = None) -> Race | None:
    """The race whose Overall standings ``user`` is shown: staff follow the live anchor
    (pick_race_anchor); everyone else sees the Overall as of the latest public race."""
    races = list(Race.objects.filter(benchmark=benchmark, status__in=ANCHOR_STATUSES))
    return pick_race_anchor(races) if _is_staff(user) else pick_public_anchor(races)


def race_live_entries(*, race: Race) -> list[tuple[AgentVersion, int]]:
    """Who has validator runs in ``race`` and how many (no scores): the live part of the
    Overall view while the race's values are embargoed."""
    counts: dict[int, int] = defaultdict(int)
    versions: dict[int, AgentVersion] = {}
    for run in RaceRun.objects.filter(race=race).select_related("agent_version__agent").order_by("id"):
        counts[run.agent_version_id] += 1
        versions[run.agent_version_id] = run.agent_version
    return sorted(((versions[pk], count) for pk, count in counts.items()), key=lambda item: str(item[0]))


def overall_board(*, race: Race) -> list[OverallStanding]:
    """Agent versions ranked by their three-race Overall as of ``race``."""
    return list(OverallStanding.objects.filter(race=race).select_related("agent_version__agent").order_by("rank"))


def race_results(*, race: Race) -> list[RaceResult]:
    """A race's raw results (rank by raw score), with baseline and vs Field delta."""
    return list(RaceResult.objects.filter(race=race).select_related("agent_version__agent").order_by("rank"))


def race_baseline(*, race: Race) -> float | None:
    return RaceResult.objects.filter(race=race).values_list("baseline", flat=True).first()


def race_runs_of(*, race: Race) -> list[RaceRun]:
    """Every validator run of a race (for the run-status table), without outcomes."""
    return list(
        RaceRun.objects.filter(race=race)
        .select_related("agent_version__agent", "validator", "submission")
        .order_by("agent_version__agent__name", "agent_version__version", "validator__name", "id")
    )


def agent_version_get(
    *, benchmark: Benchmark, agent_slug: str, version: str, user: Viewer | None = None
) -> AgentVersion:
    """A public agent version (leaderboard.selectors.agents: one with a public run), or 404."""
    from leaderboard.selectors.agents import agent_versions_public

    agent_version = (
        agent_versions_public(user=user).select_related("agent").filter(agent__slug=agent_slug, version=version).first()
    )
    if agent_version is None:
        raise Http404(f"No agent version {agent_slug} {version}")
    return agent_version


@dataclass(frozen=True)
class BuildupRow:
    race: Race
    result: RaceResult | None  # None: did not race; counts at the field baseline (delta 0)


@dataclass(frozen=True)
class AgentBuildup:
    anchor: Race | None
    standing: OverallStanding | None
    window: list[BuildupRow]
    history: list[RaceResult]


def agent_version_buildup(
    *, benchmark: Benchmark, agent_version: AgentVersion, user: Viewer | None = None
) -> AgentBuildup:
    """The version's three-race build-up as of the anchor race ``user`` may see (see
    race_overall_anchor), plus its history of races whose results ``user`` may see."""
    anchor = race_overall_anchor(benchmark=benchmark, user=user)
    history = [
        result
        for result in RaceResult.objects.filter(race__benchmark=benchmark, agent_version=agent_version)
        .select_related("race")
        .order_by("-race__number")
        if race_values_visible(result.race, user)
    ]
    if anchor is None:
        return AgentBuildup(anchor=None, standing=None, window=[], history=history)
    standing = OverallStanding.objects.filter(race=anchor, agent_version=agent_version).first()
    started = list(
        Race.objects.filter(
            benchmark=benchmark,
            number__lte=anchor.number,
            status__in=(Race.Status.RUNNING, Race.Status.EMBARGOED, Race.Status.RELEASED),
        ).order_by("-number")
    )
    # The window holds the anchor and the races before it, back to (and including) the launch race.
    window_races: list[Race] = []
    for race in started:
        window_races.append(race)
        if race.is_launch or len(window_races) == race_scoring.OVERALL_WINDOW:
            break
    by_race = {result.race_id: result for result in history}
    window = [BuildupRow(race=race, result=by_race.get(race.pk)) for race in window_races]
    return AgentBuildup(anchor=anchor, standing=standing, window=window, history=history)


def qualifying_release(*, benchmark: Benchmark) -> Release | None:
    return benchmark.releases.filter(published=True).order_by("-published_at", "-id").first()


@dataclass(frozen=True)
class QualifyingRow:
    agent_version: AgentVersion
    score: float | None
    runs_included: int
    runs_excluded: int
    runs: list[RaceRun]


def qualifying_board(*, release: Release) -> list[QualifyingRow]:
    """Qualifying scores on the public frozen task set: mean of included successful runs."""
    runs = (
        RaceRun.objects.filter(release=release, race__isnull=True)
        .select_related("agent_version__agent", "validator")
        .order_by("id")
    )
    by_version: dict[int, list[RaceRun]] = defaultdict(list)
    versions: dict[int, AgentVersion] = {}
    for run in runs:
        by_version[run.agent_version_id].append(run)
        versions[run.agent_version_id] = run.agent_version
    rows = []
    for version_id, version_runs in by_version.items():
        scores = [
            race_scoring.RunScore(
                status=run.status,
                score=run.score if run.status == race_scoring.RUN_OK else None,
                expected=run.expected_tasks,
                infrastructure_errors=run.infrastructure_errors,
            )
            for run in version_runs
        ]
        included = sum(1 for run in version_runs if run.status == race_scoring.RUN_OK)
        rows.append(
            QualifyingRow(
                agent_version=versions[version_id],
                score=race_scoring.race_score(scores),
                runs_included=included,
                runs_excluded=len(version_runs) - included,
                runs=version_runs,
            )
        )
    rows.sort(key=lambda row: (row.score is None, -(row.score or 0.0), str(row.agent_version)))
    return rows


def race_run_get(*, pk: int) -> RaceRun:
    run = (
        RaceRun.objects.select_related(
            "race__benchmark", "release__benchmark", "agent_version__agent", "validator", "submission"
        )
        .prefetch_related(Prefetch("outcomes", queryset=RaceTaskOutcome.objects.order_by("task_id")))
        .filter(pk=pk)
        .first()
    )
    if run is None:
        raise Http404("No such run")
    return run


def race_categories_visible(race: Race | None) -> bool:
    """Qualifying (no race): as soon as results are in. A race: only once released."""
    return race is None or race.status == Race.Status.RELEASED


@dataclass(frozen=True)
class OutcomeView:
    """One episode as it may be shown. While embargoed everything that names or
    implies the failure category (category, verdict, error and limit flags) and
    the hidden task id are blank; only the paid reward remains."""

    task_label: str
    paid_reward: float | None  # None: the race's values are embargoed for this viewer
    reward: float | None
    verdict_status: str
    failure_category: str
    failure_message: str
    step_limit_hit: bool | None
    time_limit_hit: bool | None
    embargoed: bool


def race_outcomes_visible(race_run: RaceRun, user: Viewer | None = None) -> list[OutcomeView]:
    """The run's per-task outcomes with embargoed failure categories blanked, and embargoed
    paid rewards blanked too for anyone but staff and the run's filer.

    Every page, export and API response that shows outcomes must use this."""
    visible = race_categories_visible(race_run.race)
    rewards_visible = race_run_values_visible(race_run, user)
    views = []
    for index, outcome in enumerate(race_run.outcomes.all(), start=1):
        if visible:
            views.append(
                OutcomeView(
                    task_label=outcome.task_id,
                    paid_reward=outcome.paid_reward,
                    reward=outcome.reward,
                    verdict_status=outcome.verdict_status,
                    failure_category=outcome.failure_category,
                    failure_message=FAILURE_MESSAGES.get(outcome.failure_category, ""),
                    step_limit_hit=outcome.step_limit_hit,
                    time_limit_hit=outcome.time_limit_hit,
                    embargoed=False,
                )
            )
        else:
            views.append(
                OutcomeView(
                    task_label=f"hidden task {index}",
                    paid_reward=outcome.paid_reward if rewards_visible else None,
                    reward=None,
                    verdict_status="",
                    failure_category="",
                    failure_message="",
                    step_limit_hit=None,
                    time_limit_hit=None,
                    embargoed=True,
                )
            )
    return views
