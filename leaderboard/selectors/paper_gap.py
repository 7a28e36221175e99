"""Reads for the visitor pages of paper-gap benchmarks (seed 000).

Longer than 500 lines on purpose: every paper-gap page (board, run, agent, release, task)
reads through the same board row type, filters and cache keys defined here; split by page,
the pieces would import one another.

Every selector issues a fixed number of queries whatever the number of rows:
leaderboards read the precomputed Standing rows (never aggregate per request),
and related rows come through select_related/prefetch_related. Anchors
(ReleaseTask.paper_value) leave this module only through
``ReleaseTask.public_paper_value``; callers never see a withheld one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.cache import cache
from django.db.models import Case, Count, Exists, F, IntegerField, Max, OuterRef, Prefetch, QuerySet, Value, When
from django.http import Http404, QueryDict
from django.urls import reverse

from leaderboard.api_query import whole_number
from leaderboard.models import Agent, Benchmark, OfficialRerun, Release, ReleaseTask, Run, Standing, Task, TaskResult
from leaderboard.models.races import OverallStanding, Race, ScorecardStanding
from leaderboard.selectors.agents import agents_public
from leaderboard.selectors.declarations import (
    DECLARED_FIELDS,
    BoardFilters,
    FilterError,
    board_filters_from_params,
    declarations_attach,
    with_declarations,
)
from leaderboard.selectors.race import ANCHOR_STATUSES, pick_public_anchor, pick_race_anchor
from leaderboard.selectors.standing_ranks import RANK_ORDER, with_rank
from leaderboard.selectors.visibility import benchmarks_visible, releases_visible, run_is_visible
from leaderboard.users import Viewer

BOARD_PAGE_SIZE = 50
CHART_DEFAULT_N = 10
CHART_MAX_N = 50

TABS: dict[str, str] = {
    Standing.Tab.OVERALL: "Overall",
    Standing.Tab.REPRODUCTION: "Reproduction",
    Standing.Tab.OPEN: "Open-ended",
}

# Sort key -> (Standing fields, natural direction is descending?). Ties break on rank.
# "rank" has no field: it is the rank order itself (leaderboard.selectors.standing_ranks).
SORTS: dict[str, tuple[tuple[str, ...], bool]] = {
    "rank": ((), False),
    "agent": (("agent_name", "version"), False),
    "score": (("score",), True),
    "pass_rate": (("pass_rate",), True),
    "coverage": (("covered",), True),
    "runtime": (("runtime_seconds",), False),
    "tokens": (("tokens",), False),
    "cost": (("cost_usd",), False),  # leaderboard.selectors.declarations.with_declarations
    "effort": (("effort_tier",), False),  # free text (submitter-declared): alphabetical
    # By strength, strongest first (the level names sorted as text put attested before validated
    # and verified last).
    "verification": (("verification_strength",), True),
    "date": (("verified_at",), True),
}

# A Standing's verification level as a number, weakest first (Run.Level, revoked runs are off the board).
VERIFICATION_STRENGTH = Case(
    *(
        When(verification=level, then=Value(strength))
        for strength, level in enumerate(("validated", "attested", "verified"))
    ),
    default=Value(-1),
    output_field=IntegerField(),
)

# The chart's modes (seed 000: "Top-N agents by Pass Rate, Score, or Both"). The mode picks
# the N agents too: "pass_rate" plots the top N by pass rate, "score" and "both" the top N by
# rank (score within coverage). It rides in the board's querystring (?metric=) so it permalinks.
CHART_METRICS: dict[str, str] = {"both": "Both", "score": "Score", "pass_rate": "Pass rate"}


class BoardQueryError(ValueError):
    """A leaderboard querystring value that is not one the page offers."""


@dataclass(frozen=True)
class BoardQuery:
    tab: str = Standing.Tab.OVERALL
    sort: str = "rank"
    descending: bool = False
    complete_only: bool = False
    page: int = 1
    # Search and filters: part of the URL like everything else, so a view is shareable.
    filters: BoardFilters = field(default_factory=BoardFilters)
    chart: str = "both"

    def params(self, **changes: Any) -> dict[str, str]:
        """The querystring of this view (defaults omitted), with some values changed."""
        values = {
            "tab": self.tab,
            "sort": self.sort,
            "dir": "desc" if self.descending else "asc",
            "complete": "1" if self.complete_only else "",
            "page": str(self.page),
            "metric": self.chart,
        }
        values.update(self.filters.params())
        values.update({k: str(v) for k, v in changes.items()})
        defaults = {"tab": "overall", "sort": "rank", "complete": "", "page": "1", "metric": "both"}
        default_dir = "desc" if SORTS[values["sort"]][1] else "asc"
        return {
            k: v for k, v in values.items() if v and not (defaults.get(k) == v or (k == "dir" and v == default_dir))
        }


def board_query_from_params(params: QueryDict) -> BoardQuery:
    """Parse tab, sort, dir, complete and page; raise BoardQueryError naming the bad one."""
    tab = params.get("tab") or Standing.Tab.OVERALL
    if tab not in TABS:
        raise BoardQueryError(f"tab={tab!r} is not a leaderboard tab: expected one of {', '.join(TABS)}")
    sort = params.get("sort") or "rank"
    if sort not in SORTS:
        raise BoardQueryError(f"sort={sort!r} is not a sortable column: expected one of {', '.join(SORTS)}")
    direction = params.get("dir") or ("desc" if SORTS[sort][1] else "asc")
    if direction not in ("asc", "desc"):
        raise BoardQueryError(f"dir={direction!r}: expected 'asc' or 'desc'")
    complete = params.get("complete") or ""
    if complete not in ("", "0", "1"):
        raise BoardQueryError(f"complete={complete!r}: expected '1' (complete coverage only) or '0'")
    raw_page = params.get("page") or "1"
    page = whole_number(raw_page, minimum=1)
    if page is None:
        raise BoardQueryError(f"page={raw_page[:24]!r}: expected a positive whole number")
    try:
        filters = board_filters_from_params(params)
    except FilterError as error:
        raise BoardQueryError(str(error)) from None
    # ?metric= is also what static/js/chart-permalink.js keeps in the address bar and links.
    chart = params.get("metric") or "both"
    if chart not in CHART_METRICS:
        raise BoardQueryError(f"metric={chart[:24]!r} is not a chart mode: expected one of {', '.join(CHART_METRICS)}")
    return BoardQuery(
        tab=tab,
        sort=sort,
        descending=direction == "desc",
        complete_only=complete == "1",
        page=page,
        filters=filters,
        chart=chart,
    )


def release_get(*, benchmark_slug: str, version: str, staff: bool = False) -> Release:
    """A paper-gap release visitors may see (published, or any for staff), or 404. A scorecard or
    race benchmark's release is a 404 here: its board, exports and badge are the scheme's own
    (leaderboard/scheme_urls.py), and these pages showed it as an empty paper-gap board."""
    release = (
        releases_visible(staff=staff)
        .filter(benchmark__slug=benchmark_slug, version=version, benchmark__scheme=Benchmark.Scheme.PAPER_GAP)
        .first()
    )
    if release is None:
        raise Http404("No such release")
    return release


# How long an anonymous board request trusts a cached (release id, generation) pair.
# standings_refresh bumps the generation in the database; a visitor sees the new
# standings at most this many seconds later, and a busy board costs one small
# query per worker per interval instead of one per request.
RELEASE_POINTER_SECONDS = 2


def release_pointer_key(*, benchmark_slug: str, version: str) -> str:
    digest = hashlib.sha256(f"{benchmark_slug}\n{version}".encode()).hexdigest()[:32]
    return f"podium:release-pointer:{digest}"


def release_pointer(*, benchmark_slug: str, version: str) -> tuple[int, int] | None:
    """(id, generation) of a published release, cached for RELEASE_POINTER_SECONDS; None if there is none."""
    key = release_pointer_key(benchmark_slug=benchmark_slug, version=version)
    pointer = cache.get(key)
    if pointer is None:
        row = (
            Release.objects.filter(benchmark__slug=benchmark_slug, version=version, published=True)
            .values_list("pk", "generation")
            .first()
        )
        pointer = tuple(row) if row else (0, 0)
        cache.set(key, pointer, RELEASE_POINTER_SECONDS)
    return pointer if pointer[0] else None


def _newest_first(releases: QuerySet[Release]) -> QuerySet[Release]:
    return releases.order_by(F("published_at").desc(nulls_last=True), "-id")


def release_current(*, benchmark_slug: str, staff: bool = False) -> Release:
    """The release a benchmark's address shows: the newest visible release with a ranked run,
    else (no release has one yet) the newest visible release; 404 when there is none.

    Publishing a new release must not empty the default board: until the new release has a
    verified public run, visitors keep landing on the standing board, which announces the
    newer release (release_newer_unranked). One query.
    """
    releases = _newest_first(releases_visible(staff=staff).filter(benchmark__slug=benchmark_slug)).annotate(
        ranked=Exists(Standing.objects.filter(release=OuterRef("pk"), tab=Standing.Tab.OVERALL))
    )
    release = releases.order_by(F("ranked").desc(), F("published_at").desc(nulls_last=True), "-id").first()
    if release is None:
        raise Http404("This benchmark has no published release yet")
    return release


def release_newer_unranked(*, release: Release, releases: Sequence[Release]) -> list[Release]:
    """The visible releases newer than ``release`` (from the version switcher's list, newest
    first, so no query): the board announces them while ``release`` stays the default."""
    newer: list[Release] = []
    for other in releases:
        if other.pk == release.pk:
            break
        if other.published:  # staff also list drafts: those are not announced to anyone
            newer.append(other)
    return newer if any(r.pk == release.pk for r in releases) else []


def release_siblings(*, release: Release, staff: bool = False) -> list[Release]:
    """Every visible release of the same benchmark, newest first (for the version switcher),
    each with ``ranked``: whether it has a ranked run (what release_current decides by)."""
    return list(
        _newest_first(releases_visible(staff=staff).filter(benchmark_id=release.benchmark_id)).annotate(
            ranked=Exists(Standing.objects.filter(release=OuterRef("pk"), tab=Standing.Tab.OVERALL))
        )
    )


def _board_filtered(release: Release, query: BoardQuery) -> QuerySet[Standing]:
    """The view's rows, filtered: no order, no annotation (the filters join what they test)."""
    rows = Standing.objects.filter(release=release, tab=query.tab)
    if query.complete_only:
        rows = rows.filter(complete=True)
    return query.filters.apply(rows)


def _board_rows(release: Release, query: BoardQuery, *, declarations: bool = True) -> QuerySet[Standing]:
    """The view's rows, filtered and in its order, without their rank (``_ranked`` adds it last);
    with ``declarations=False`` annotated only with what the order needs (the cost, for its sort):
    the caller attaches the rest (``declarations_attach``)."""
    rows = _board_filtered(release, query)
    if declarations:
        rows = with_declarations(rows)
    elif query.sort == "cost":
        rows = rows.annotate(cost_usd=DECLARED_FIELDS["cost_usd"].copy())
    if query.sort == "verification":
        rows = rows.annotate(verification_strength=VERIFICATION_STRENGTH.copy())
    fields, _ = SORTS[query.sort]
    if query.sort == "rank":
        order = [expression.copy() for expression in RANK_ORDER]
        if query.descending:
            for expression in order:
                expression.reverse_ordering()
        return rows.order_by(*order, "id")
    ordering = [F(name).desc(nulls_last=True) if query.descending else F(name).asc(nulls_last=True) for name in fields]
    return rows.order_by(*ordering, *RANK_ORDER, "id")


def _ranked(rows: QuerySet[Standing], query: BoardQuery, *, extra_filters: bool = False) -> QuerySet[Standing]:
    """``rows`` (``_board_rows``) with each row's rank in its tab: by window when only the tab and
    ``complete`` filter them, else by count (leaderboard.selectors.standing_ranks)."""
    return with_rank(rows, whole_tab=not (query.filters.active or extra_filters))


@dataclass
class BoardRow:
    standing: Standing
    # The interval overlaps the row shown above: the two are statistically tied.
    overlaps_above: bool = False


@dataclass
class BoardPage:
    rows: list[BoardRow]
    total: int
    page: int
    pages: int
    page_size: int = BOARD_PAGE_SIZE
    # When the newest run on this view entered the board (the board's "last updated").
    updated_at: Any = None

    @property
    def first_index(self) -> int:
        return (self.page - 1) * self.page_size + 1 if self.total else 0

    @property
    def last_index(self) -> int:
        return min(self.page * self.page_size, self.total)


def _intervals_overlap(upper: Standing, lower: Standing) -> bool:
    if upper.ci_low is None or upper.ci_high is None or lower.ci_low is None or lower.ci_high is None:
        return False
    return lower.ci_high >= upper.ci_low and upper.ci_high >= lower.ci_low


def board_page(*, release: Release, query: BoardQuery) -> BoardPage:
    """One page of a leaderboard view: three queries (count and newest, rows, their declarations)
    whatever the size of the board."""
    rows = _board_rows(release, query, declarations=False)
    # Counted without the declarations' annotations: their four joins (run, its cost, the
    # version, its declaration) change no count but made PostgreSQL join every row of the tab
    # (28 of a cold page's ~120 ms at 10,000 runs).
    summary = _board_filtered(release, query).aggregate(total=Count("id"), updated_at=Max("verified_at"))
    total = summary["total"]
    pages = max(1, -(-total // BOARD_PAGE_SIZE))
    page = min(query.page, pages)
    start = (page - 1) * BOARD_PAGE_SIZE
    # One row before the page so the first row's "≈" compares with the row above it.
    fetched = list(_ranked(rows, query)[max(0, start - 1) : start + BOARD_PAGE_SIZE])
    declarations_attach(fetched)
    previous = fetched.pop(0) if start > 0 and fetched else None
    out: list[BoardRow] = []
    for standing in fetched:
        out.append(
            BoardRow(standing=standing, overlaps_above=previous is not None and _intervals_overlap(previous, standing))
        )
        previous = standing
    return BoardPage(rows=out, total=total, page=page, pages=pages, updated_at=summary["updated_at"])


def board_rows_all(
    *, release: Release, query: BoardQuery, exclude_private: bool = False, verification: str = ""
) -> QuerySet[Standing]:
    """Every row of a leaderboard view (for CSV/JSON exports and the API), in the view's order,
    each with its rank; the API narrows them further (private runs, one verification level)
    here, before the ranks are computed, so the ranks stay those of the whole tab."""
    rows = _board_rows(release, query)
    if exclude_private:
        # Private runs never have a row (standings_refresh); excluding them removes nothing
        # from the tab, so the window still numbers the whole tab.
        rows = rows.exclude(run__is_private=True)
    if verification:
        rows = rows.filter(verification=verification)
    return _ranked(rows, query, extra_filters=bool(verification))


def chart_top(
    *, release: Release, tab: str, n: int, by: str = "score", filters: BoardFilters | None = None
) -> list[Standing]:
    """The top-N rows of a tab that the chart plots, within the board's filters: by rank
    (``by="score"``: complete runs first, then score), or by pass rate (``by="pass_rate"``,
    highest first, ties by rank)."""
    rows = Standing.objects.filter(release=release, tab=tab)
    if filters is not None:
        rows = filters.apply(rows)
    rows = with_rank(rows, whole_tab=filters is None or not filters.active)
    if by == "pass_rate":
        rows = rows.order_by(F("pass_rate").desc(nulls_last=True), *RANK_ORDER, "id")
    else:
        rows = rows.order_by(*RANK_ORDER, "id")
    return list(
        rows.only(
            "release_id",
            "tab",
            "agent_name",
            "version",
            "agent_slug",
            "score",
            "pass_rate",
            "ci_low",
            "ci_high",
            "run_id",
            "covered",
            "required",
            "complete",
        )[:n]
    )


def tab_coverage(*, release: Release, tab: str, run_ids: list[int]) -> dict[int, tuple[int, int]]:
    """{run id: (covered, required)} counted over the tab's genre: a run covering all 11 tasks
    covers 6/6 on a 6-task Reproduction tab (Standing.covered is over every task). Empty on the
    Overall tab (Standing's own figures are right there); otherwise two queries."""
    if tab == Standing.Tab.OVERALL or not run_ids:
        return {}
    required = ReleaseTask.objects.filter(release=release, genre=tab).count()
    covered = dict(
        TaskResult.objects.filter(run_id__in=run_ids, release_task__genre=tab)
        .values("run_id")
        .annotate(n=Count("id"))
        .values_list("run_id", "n")
    )
    return {run_id: (covered.get(run_id, 0), required) for run_id in run_ids}


# --- home ---------------------------------------------------------------------------------------


@dataclass
class HomeLeader:
    """Who leads a benchmark, in its own scheme's terms."""

    name: str
    url: str
    figure: str


@dataclass
class HomeEntry:
    benchmark: Benchmark
    release: Release | None
    leader: HomeLeader | None
    runs: int
    # Visible releases newer than ``release`` that have no ranked run yet (announced, not shown).
    newer: list[Release] = field(default_factory=list)


def home_entries(*, staff: bool = False) -> list[HomeEntry]:
    """Every benchmark with its current release, its leader and its number of ranked
    entries, whatever its scheme: six queries however many benchmarks there are.

    Paper-gap boards read Standing (Overall tab), scorecard boards ScorecardStanding,
    race boards the Overall standings of the race the race pages anchor to (the
    running race while one is live, else the most recent completed one)."""

    # A benchmark with only drafts (synced, not published) is staff's (visibility.benchmarks_visible).
    benchmarks = list(
        benchmarks_visible(staff=staff)
        .order_by("name")
        .prefetch_related(
            Prefetch(
                "releases",
                queryset=_newest_first(releases_visible(staff=staff)).annotate(
                    ranked=Exists(Standing.objects.filter(release=OuterRef("pk"), tab=Standing.Tab.OVERALL))
                ),
                to_attr="visible_releases",
            )
        )
    )
    # The same rule as release_current: the newest release with a ranked run, else the newest.
    current = {
        b.id: next((r for r in b.visible_releases if r.ranked), b.visible_releases[0] if b.visible_releases else None)
        for b in benchmarks
    }
    release_ids = [r.id for r in current.values() if r is not None]

    leaders: dict[int, HomeLeader] = {}
    counts: dict[int, int] = {}
    # In rank order within each release: a release's first row is its leader.
    for row in Standing.objects.filter(release_id__in=release_ids, tab=Standing.Tab.OVERALL).order_by(
        "release_id", *RANK_ORDER
    ):
        counts[row.release_id] = counts.get(row.release_id, 0) + 1
        if row.release_id not in leaders:
            leaders[row.release_id] = HomeLeader(
                name=f"{row.agent_name} {row.version}",
                url=reverse("run_detail", args=[row.run_id]),
                figure=f"score {row.score:.2f}" if row.score is not None else "",
            )
    for card in (
        ScorecardStanding.objects.filter(release_id__in=release_ids)
        .select_related("agent", "scorecard__agent_version", "scorecard__card")
        .order_by("rank")
    ):
        counts[card.release_id] = counts.get(card.release_id, 0) + 1
        if card.rank == 1:
            leaders[card.release_id] = HomeLeader(
                name=f"{card.agent.name} {card.scorecard.agent_version.version}",
                url=reverse("scorecard_detail", args=[card.scorecard.card_id]),
                figure=f"success {card.scorecard.success_rate:.0%}",
            )

    # Race boards: the anchor race of each race benchmark, as the race pages pick it, from one query.
    # Visitors get the latest public race's Overall: a running or embargoed race's is staff-only.
    pick = pick_race_anchor if staff else pick_public_anchor
    races_by_benchmark: dict[int, list[Race]] = {}
    for race in Race.objects.filter(benchmark__scheme=Benchmark.Scheme.RACE, status__in=ANCHOR_STATUSES):
        races_by_benchmark.setdefault(race.benchmark_id, []).append(race)
    anchors = {
        benchmark_id: anchor
        for benchmark_id, races in races_by_benchmark.items()
        if (anchor := pick(races)) is not None
    }
    race_leaders: dict[int, HomeLeader] = {}
    race_counts: dict[int, int] = {}
    benchmark_of_race = {race.id: benchmark_id for benchmark_id, race in anchors.items()}
    slugs = {b.id: b.slug for b in benchmarks}
    for overall in (
        OverallStanding.objects.filter(race_id__in=benchmark_of_race)
        .select_related("agent_version__agent")
        .order_by("rank", "pk")  # ties share a rank: written in listing order
    ):
        benchmark_id = benchmark_of_race[overall.race_id]
        race_counts[benchmark_id] = race_counts.get(benchmark_id, 0) + 1
        if overall.is_top or benchmark_id not in race_leaders:
            race_leaders[benchmark_id] = HomeLeader(
                name=f"{overall.agent_version.agent.name} {overall.agent_version.version}",
                url=reverse(
                    "race_agent_version",
                    args=[slugs[benchmark_id], overall.agent_version.agent.slug, overall.agent_version.version],
                ),
                figure=f"Overall {overall.overall:+.3f}",
            )

    entries = []
    for b in benchmarks:
        release = current[b.id]
        if b.scheme == Benchmark.Scheme.RACE:
            leader, runs = race_leaders.get(b.id), race_counts.get(b.id, 0)
        else:
            leader = leaders.get(release.id) if release else None
            runs = counts.get(release.id, 0) if release else 0
        newer = release_newer_unranked(release=release, releases=b.visible_releases) if release else []
        entries.append(HomeEntry(benchmark=b, release=release, leader=leader, runs=runs, newer=newer))
    return entries


# --- run page -----------------------------------------------------------------------------------


def run_get(*, run_id: int, user: Viewer | None) -> Run:
    """A run with everything its page shows; private runs only for their submitter and staff."""
    run = (
        Run.objects.select_related(
            "release__benchmark",
            "agent_version__agent",
            "submission__submitter",
            "submission__api_key",
            "carried_from__release",  # a run a rescore carried onto this release names its source
        )
        .prefetch_related(
            Prefetch(
                "task_results",
                queryset=TaskResult.objects.select_related(
                    "release_task__task", "signing_key__evaluator", "judge_key"
                ).order_by("release_task__position", "release_task__task__slug"),
            ),
            "events__actor",
            Prefetch("reruns", queryset=OfficialRerun.objects.select_related("actor").order_by("created_at", "id")),
        )
        .filter(pk=run_id)
        .first()
    )
    if run is None:
        raise Http404("No such run")
    if not run_is_visible(run, user=user):
        raise Http404("No such run")
    return run


def run_rank(*, run: Run) -> dict[str, int]:
    """The run's rank on each tab it appears on."""
    ranked = with_rank(Standing.objects.filter(run=run), whole_tab=False)
    return dict(ranked.values_list("tab", "rank"))  # type: ignore[misc]  # "rank" is with_rank's annotation


def release_leader(*, release_id: int) -> Standing | None:
    """The release's rank 1 on the Overall tab (one query), for the run page's "compare with
    the leader" link: a visitor knows no other run's number to type into the comparison form."""
    return (
        Standing.objects.filter(release_id=release_id, tab=Standing.Tab.OVERALL)
        .only("run_id", "agent_name", "version")
        .order_by(*RANK_ORDER, "id")
        .first()
    )


# --- task, release and agent pages --------------------------------------------------------------


def release_task_get(*, release: Release, task_slug: str) -> ReleaseTask:
    release_task = (
        ReleaseTask.objects.select_related("task__benchmark", "simulator")
        .filter(release=release, task__slug=task_slug)
        .first()
    )
    if release_task is None:
        raise Http404("No such task in this release")
    return release_task


def release_tasks(*, release: Release) -> list[ReleaseTask]:
    return list(
        ReleaseTask.objects.filter(release=release)
        .select_related("task", "simulator")
        .order_by("position", "task__slug")
    )


def agent_get(*, slug: str, user: Any = None) -> Agent:
    """A public agent (leaderboard.selectors.agents), or 404: an agent named only by private or
    rejected submissions does not exist for visitors (staff see every agent)."""
    agent = agents_public(user=user).filter(slug=slug).first()
    if agent is None:
        raise Http404("No such agent")
    return agent


def agent_runs(*, agent: Agent, staff: bool = False) -> list[Run]:
    """The agent's public runs on visible releases, newest first, each with its overall rank
    (three queries: the task results are read for leaderboard.disclosure)."""
    runs = (
        Run.objects.filter(agent_version__agent=agent, is_private=False, submission__is_private=False)
        .select_related("release__benchmark", "agent_version", "submission", "cost")  # cost: the board's cost column
        .prefetch_related(Prefetch("task_results", queryset=TaskResult.objects.select_related("release_task__task")))
    )
    if not staff:
        runs = runs.filter(release__published=True)
    listed = list(runs.order_by("-created_at", "-id"))
    ranks = dict(
        with_rank(
            Standing.objects.filter(run_id__in=[r.id for r in listed], tab=Standing.Tab.OVERALL), whole_tab=False
        ).values_list("run_id", "rank")  # type: ignore[misc]  # "rank" is with_rank's annotation
    )
    for run in listed:
        run.overall_rank = ranks.get(run.id)  # type: ignore[attr-defined]  # display-only, for the template
    return listed


def agent_best_standing(*, release: Release, agent_slug: str) -> Standing | None:
    """The agent's best Overall row on a release (for its badge)."""
    return (
        with_rank(
            Standing.objects.filter(release=release, tab=Standing.Tab.OVERALL, agent_slug=agent_slug), whole_tab=False
        )
        .order_by(*RANK_ORDER, "id")
        .first()
    )


# --- submissions --------------------------------------------------------------------------------


def task_by_benchmark(*, benchmark_slug: str, task_slug: str) -> Task:
    task = Task.objects.select_related("benchmark").filter(benchmark__slug=benchmark_slug, slug=task_slug).first()
    if task is None:
        raise Http404("No such task")
    return task


@dataclass(frozen=True)
class RunSigner:
    """A key that signed some of a run's task results: an evaluator key (its results) or a judge
    key (its faithfulness verdicts, each under a rubric)."""

    kind: str  # "evaluator" | "judge"
    key_id: str
    owner: str  # the evaluator's simulator, or the judge's name
    tasks: tuple[str, ...]
    rubrics: tuple[str, ...]
    revoked_at: Any  # when the key was revoked since (None: in force)


def run_signatures(*, run: Run) -> list[RunSigner]:
    """The evaluator and judge keys that signed the run's task results, evaluators first (from the
    prefetched rows: no query). The same keys ``leaderboard.provenance.task_provenance`` names per task."""
    signers: dict[tuple[str, str], tuple[str, list[str], list[str], Any]] = {}
    for result in run.task_results.all():
        slug = result.release_task.task.slug
        key = result.signing_key
        if result.signature == "valid" and key is not None:
            owner = key.evaluator.simulator if key.evaluator else ""
            signers.setdefault(("evaluator", key.key_id), (owner, [], [], key.revoked_at))[1].append(slug)
        judge_key = result.judge_key
        if result.faithfulness_source == "judge_signed" and judge_key is not None:
            entry = signers.setdefault(("judge", judge_key.key_id), (result.judge, [], [], judge_key.revoked_at))
            entry[1].append(slug)
            if result.rubric_version not in entry[2]:
                entry[2].append(result.rubric_version)
    return [
        RunSigner(
            kind=kind, key_id=key_id, owner=owner, tasks=tuple(tasks), rubrics=tuple(rubrics), revoked_at=revoked_at
        )
        for (kind, key_id), (owner, tasks, rubrics, revoked_at) in sorted(signers.items())
    ]
