"""Reads for the race pages (seed 002).

Boards read precomputed rows (RaceResult, OverallStanding) with a fixed number of
queries. The one rule every caller relies on: a race episode's failure category
leaves this module only through :func:`race_outcomes_visible`, which blanks it (and
everything that would reveal it) until the race is released. Qualifying episodes are
never embargoed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet
from django.http import Http404

from leaderboard.models import AgentVersion, Benchmark, Race, RaceRun, RaceTaskOutcome, Release
from leaderboard.models.races import OverallStanding, RaceResult
from leaderboard.selectors.agents import agent_versions_public
from leaderboard.selectors.releases import benchmark_of_scheme
from leaderboard.selectors.visibility import viewer_is_staff as _is_staff
from leaderboard.users import Viewer
from scoring import race as race_scoring

FAILURE_MESSAGES: dict[str, str] = {category.code: category.message for category in race_scoring.FAILURE_CATEGORIES}
EMBARGO_NOTE = "Under embargo until the race result is released"


def race_benchmark_get(*, benchmark_slug: str, user: Viewer) -> Benchmark:
    """The race benchmark ``slug`` as ``user`` may see it (a draft-only one is staff's), or 404."""
    return benchmark_of_scheme(benchmark_slug, Benchmark.Scheme.RACE, staff=_is_staff(user))


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


def race_values_visible(race: Race | None, user: Any = None) -> bool:
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


def race_runs_shown(runs: QuerySet[RaceRun], *, race: Race | None, user: Viewer | None = None) -> QuerySet[RaceRun]:
    """The validator runs of ``runs`` (all of ``race``) that ``user`` may know exist.

    Only an infrastructure failure is run again (seed 002: "the evaluation is run again"), so a
    second run of a version by the same validator says the first was one: a failure category,
    which the embargo withholds. Until the race is released anyone but staff sees, per version
    and validator, the first run only (and every run they filed themselves); the race page's
    list, the Overall page's live entries, the signing summary and the run pages all read the
    runs through this. Qualifying and released races show every run."""
    if race_values_visible(race, user):
        return runs
    earlier = RaceRun.objects.filter(
        race=OuterRef("race"),
        agent_version=OuterRef("agent_version"),
        validator=OuterRef("validator"),
        pk__lt=OuterRef("pk"),
    )
    shown = ~Q(Exists(earlier))
    if user is not None and getattr(user, "is_authenticated", False):
        shown |= Q(submission__submitter_id=user.pk)
    return runs.filter(shown)


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


def race_live_entries(*, race: Race, user: Viewer | None = None) -> list[tuple[AgentVersion, int]]:
    """Who has validator runs in ``race`` and how many (no scores): the live part of the
    Overall view while the race's values are embargoed (the runs ``user`` may know of)."""
    counts: dict[int, int] = defaultdict(int)
    versions: dict[int, AgentVersion] = {}
    runs = race_runs_shown(RaceRun.objects.filter(race=race), race=race, user=user)
    for run in runs.select_related("agent_version__agent").order_by("id"):
        counts[run.agent_version_id] += 1
        versions[run.agent_version_id] = run.agent_version
    return sorted(((versions[pk], count) for pk, count in counts.items()), key=lambda item: str(item[0]))


def overall_board(*, race: Race) -> list[OverallStanding]:
    """Agent versions ranked by their three-race Overall as of ``race``."""
    return list(OverallStanding.objects.filter(race=race).select_related("agent_version__agent").order_by("rank", "pk"))


def race_results(*, race: Race) -> list[RaceResult]:
    """A race's raw results (rank by raw score), with baseline and vs Field delta."""
    return list(RaceResult.objects.filter(race=race).select_related("agent_version__agent").order_by("rank", "pk"))


def race_baseline(*, race: Race) -> float | None:
    return RaceResult.objects.filter(race=race).values_list("baseline", flat=True).first()


def race_result_signers(*, race: Race) -> dict[int, tuple[list[str], list[str]]]:
    """Per agent version of ``race``: the validator keys that signed its included runs (the
    runs its raw score is the mean of: neither failed nor an infrastructure failure nor
    excluded by staff), and
    those of them revoked since, each as sorted key ids. One query."""
    signers: dict[int, tuple[set[str], set[str]]] = {}
    rows = (
        RaceRun.objects.filter(
            race=race, failed=False, infrastructure_failure=False, excluded_at__isnull=True, signing_key__isnull=False
        )
        .values_list("agent_version_id", "signing_key__key_id", "signing_key__revoked_at")
        .order_by()
    )
    for agent_version_id, key_id, revoked_at in rows:
        keys, revoked = signers.setdefault(agent_version_id, (set(), set()))
        keys.add(key_id)
        if revoked_at is not None:
            revoked.add(key_id)
    return {version: (sorted(keys), sorted(revoked)) for version, (keys, revoked) in signers.items()}


def race_runs_of(*, race: Race, user: Viewer | None = None) -> list[RaceRun]:
    """Every validator run of a race ``user`` may know of (for the run-status table), without outcomes."""
    return list(
        race_runs_shown(RaceRun.objects.filter(race=race), race=race, user=user)
        .select_related("agent_version__agent", "validator", "submission")
        .order_by("agent_version__agent__name", "agent_version__version", "validator__name", "id")
    )


def agent_version_get(
    *, benchmark: Benchmark, agent_slug: str, version: str, user: Viewer | None = None
) -> AgentVersion:
    """A public agent version (leaderboard.selectors.agents: one with a public run), or 404."""
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
        # A run staff excluded is listed (marked) but scored nowhere (race_exclusions).
        counted = [run for run in version_runs if run.excluded_at is None]
        scores = [
            race_scoring.RunScore(
                status=run.status,
                score=run.score if run.status == race_scoring.RUN_OK else None,
                expected=run.expected_tasks,
                infrastructure_errors=run.infrastructure_errors,
            )
            for run in counted
        ]
        included = sum(1 for run in counted if run.status == race_scoring.RUN_OK)
        rows.append(
            QualifyingRow(
                agent_version=versions[version_id],
                score=race_scoring.race_score(scores),
                runs_included=included,
                runs_excluded=len(counted) - included,
                runs=version_runs,
            )
        )
    rows.sort(key=lambda row: (row.score is None, -(row.score or 0.0), str(row.agent_version)))
    return rows


def race_run_get(*, public_id: str, user: Viewer | None = None) -> RaceRun:
    """The validator run at address ``public_id``, if ``user`` may know of it (race_runs_shown),
    else the 404 of a run that does not exist."""
    run = (
        RaceRun.objects.select_related(
            "race__benchmark", "release__benchmark", "agent_version__agent", "validator", "submission", "signing_key"
        )
        .prefetch_related(Prefetch("outcomes", queryset=RaceTaskOutcome.objects.order_by("task_id")))
        .filter(public_id=public_id)
        .first()
    )
    if run is None:
        raise Http404("No such run")
    # One more query only while the race's values are hidden from this viewer (race_runs_shown).
    if (
        not race_values_visible(run.race, user)
        and not race_runs_shown(RaceRun.objects.filter(pk=run.pk), race=run.race, user=user).exists()
    ):
        raise Http404("No such run")
    return run


def race_run_row_id(*, public_id: str) -> int | None:
    """The row id of the race run at address ``public_id`` (None: no such run), for the staff
    services that take row ids. Says nothing of visibility: a caller checks its own permission."""
    return RaceRun.objects.filter(public_id=public_id).values_list("pk", flat=True).first()


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
    outcomes = list(race_run.outcomes.all())
    if not visible and not rewards_visible and outcomes:
        # One blank row per expected task, not per reported episode: a task the run never
        # reported is paid 0, so "3 rows" beside the race's public "10 tasks" would tell a
        # visitor that 7 paid rewards are 0 (the run score is at most 0.3). A run with no
        # output at all stays empty: that it failed is public (the race page's Counted column).
        # (max: a row stored before expected_tasks was recorded has 0 there.)
        return [_embargoed_view(index, None) for index in range(1, max(race_run.expected_tasks, len(outcomes)) + 1)]
    views = []
    for index, outcome in enumerate(outcomes, start=1):
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
            views.append(_embargoed_view(index, outcome.paid_reward))
    return views


def _embargoed_view(index: int, paid_reward: float | None) -> OutcomeView:
    return OutcomeView(
        task_label=f"hidden task {index}",
        paid_reward=paid_reward,
        reward=None,
        verdict_status="",
        failure_category="",
        failure_message="",
        step_limit_hit=None,
        time_limit_hit=None,
        embargoed=True,
    )


def agent_race_versions(*, agent: Any) -> list[tuple[Any, str]]:
    """(benchmark, version) of every version of ``agent`` with a run on a published race release,
    by benchmark name then version: the agent page links each to its race page (it listed only
    paper-gap runs, and told a racing agent's visitors it had no public runs)."""
    rows = (
        RaceRun.objects.filter(agent_version__agent=agent, release__published=True)
        .values_list("release__benchmark", "agent_version__version")
        .distinct()
    )
    pairs = sorted(set(rows))
    benchmarks = {b.pk: b for b in Benchmark.objects.filter(pk__in={pk for pk, _ in pairs})}
    return sorted(((benchmarks[pk], version) for pk, version in pairs), key=lambda pair: (pair[0].name, pair[1]))
