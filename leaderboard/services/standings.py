"""Precomputed paper-gap standings (seed 000's Overall / Reproduction / Open tabs).

``standings_refresh`` rewrites every Standing row of one release from its Run
rows alone, so running it twice (or after a crash, inside its transaction)
always lands on the same rows. Pages read these rows and never aggregate.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F, Q, QuerySet, Window
from django.db.models.functions import RowNumber

from leaderboard.models import Release, Standing
from submissions.models import Run

# Verification levels that enter a leaderboard; mismatch and rejected never do.
LEADERBOARD_LEVELS = (Run.Level.VALIDATED, Run.Level.ATTESTED, Run.Level.VERIFIED)
TABS = (Standing.Tab.OVERALL, Standing.Tab.REPRODUCTION, Standing.Tab.OPEN)
RUN_FIELDS = (
    "id",
    "agent_version",
    "level",
    "overall",
    "reproduction",
    "open",
    "pass_rate",
    "confidence",
    "covered",
    "required",
    "complete",
    "runtime_seconds",
    "tokens_in",
    "tokens_out",
    "effort_tier",
    "created_at",
)


def _tab_score(run: Run, tab: str) -> float | None:
    return {"overall": run.overall, "reproduction": run.reproduction, "open": run.open}[tab]


def standing_sort_key(run: Run, tab: str) -> tuple[Any, ...]:
    """Best first: complete coverage, score desc, pass rate desc, earlier verified, then id.

    Seed 000: "a run is not comparable to a full run unless coverage is
    complete", so every complete run ranks above every partial one; within
    each group the tab's score decides, then the pass rate (None last), then
    who was verified first. The id only makes the order total.
    """
    score = _tab_score(run, tab)
    return (
        not run.complete,
        -(score or 0.0),
        run.pass_rate is None,
        -(run.pass_rate or 0.0),
        run.created_at,
        run.pk,
    )


def _tab_order(tab: str) -> list[Any]:
    # The database side of ``standing_sort_key``; a run without a score in the tab sorts last.
    return [
        F("complete").desc(),
        F(tab).desc(nulls_last=True),
        F("pass_rate").desc(nulls_last=True),
        F("created_at").asc(),
        F("id").asc(),
    ]


def _best_runs_by_tab(public: QuerySet[Run]) -> dict[str, list[Run]]:
    """For each tab, each agent version's best run with a score in that tab, ranked by ``standing_sort_key``.

    One query for the three tabs: a window per tab numbers each agent version's runs in
    that tab's order (a run without a score in the tab last), and a run is loaded when it
    is first in at least one tab. The first run of a partition has a score in the tab
    whenever any run of that version does, so "first and scored" picks the same run as
    filtering the scored runs first. A release with thousands of runs still loads at most
    one row per agent version and tab.
    """
    positions = {
        f"position_{tab}": Window(RowNumber(), partition_by=[F("agent_version_id")], order_by=_tab_order(tab))
        for tab in TABS
    }
    first_anywhere = Q()
    for name in positions:
        first_anywhere |= Q(**{name: 1})
    candidates = list(
        public.filter(Q(overall__isnull=False) | Q(reproduction__isnull=False) | Q(open__isnull=False))
        .annotate(**positions)
        .filter(first_anywhere)
        .select_related("agent_version__agent")
        # Only what a standing row shows: the per-task breakdown is large and never on a board.
        .only(*RUN_FIELDS, "agent_version__version", "agent_version__agent__name", "agent_version__agent__slug")
    )
    return {
        tab: sorted(
            (run for run in candidates if getattr(run, f"position_{tab}") == 1 and _tab_score(run, tab) is not None),
            key=lambda run, tab=tab: standing_sort_key(run, tab),
        )
        for tab in TABS
    }


def _interval(run: Run, tab: str) -> tuple[float | None, float | None]:
    bounds = (run.confidence or {}).get(tab)
    if not bounds or len(bounds) != 2:
        return None, None
    return bounds[0], bounds[1]


# No savepoint when nested (callers hold a transaction: verification, attestations): a failure
# here aborts the caller's whole transaction, which is what they want, for two fewer round trips.
@transaction.atomic(savepoint=False)
def standings_refresh(*, release: Release) -> int:
    """Rewrite the release's Standing rows; returns the number of rows written.

    Rows: for each tab, each agent version's best public run (validated,
    attested or verified, not private) with a score in that tab, ranked 1..n by
    ``standing_sort_key``. A version shows once per tab, with its best run,
    so resubmitting cannot crowd the board. Bumps Release.generation (cache
    keys include it). A constant number of queries whatever the run count (five);
    the release row is locked first so concurrent refreshes serialize.
    """
    generation = Release.objects.select_for_update().filter(pk=release.pk).values_list("generation", flat=True).get()
    public = Run.objects.filter(
        release=release,
        level__in=LEADERBOARD_LEVELS,
        is_private=False,
        submission__is_private=False,
    )
    best_by_tab = _best_runs_by_tab(public)
    rows: list[Standing] = []
    for tab in TABS:
        for rank, run in enumerate(best_by_tab[tab], start=1):
            low, high = _interval(run, tab)
            tokens = (
                None
                if run.tokens_in is None and run.tokens_out is None
                else (run.tokens_in or 0) + (run.tokens_out or 0)
            )
            rows.append(
                Standing(
                    release=release,
                    tab=tab,
                    run=run,
                    agent_version=run.agent_version,
                    rank=rank,
                    score=_tab_score(run, tab),
                    ci_low=low,
                    ci_high=high,
                    pass_rate=run.pass_rate,
                    covered=run.covered,
                    required=run.required,
                    complete=run.complete,
                    agent_name=run.agent_version.agent.name,
                    agent_slug=run.agent_version.agent.slug,
                    version=run.agent_version.version,
                    runtime_seconds=run.runtime_seconds,
                    tokens=tokens,
                    effort_tier=run.effort_tier,
                    verification=run.level,
                    verified_at=run.created_at,
                )
            )
    Standing.objects.filter(release=release).delete()
    Standing.objects.bulk_create(rows)
    Release.objects.filter(pk=release.pk).update(generation=F("generation") + 1)
    release.generation = generation + 1  # we hold the row lock: nobody else bumped it
    return len(rows)
