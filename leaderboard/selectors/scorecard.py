"""Reads for the scorecard pages (seed 001).

Boards read precomputed rows (ScorecardStanding) with a fixed number of queries.
While a release's hidden levels are not revealed, an episode's moves are shown only
to the card's player and staff (``scorecard_replay``).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import Http404

from leaderboard.models import Agent, Benchmark, Release, ScorecardRun
from leaderboard.models.races import ScorecardStanding
from leaderboard.selectors.releases import benchmark_of_scheme


def scorecard_release_current(*, benchmark_slug: str) -> Release:
    """The newest published release of a scorecard benchmark (staff too: a draft has no board)."""
    benchmark = benchmark_of_scheme(benchmark_slug, Benchmark.Scheme.SCORECARD, staff=False)
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
        .select_related("agent", "scorecard__agent_version", "scorecard__card")
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


def agent_scorecards(*, agent: Agent) -> list[ScorecardStanding]:
    """``agent``'s ranked best card on each published scorecard release (one query), by benchmark
    name then release: the agent page links each (it listed only paper-gap runs, and told a
    scorecard agent's visitors it had no public runs). Only board rows: a card that does not
    rank (no move, a private level) is not listed."""
    return list(
        ScorecardStanding.objects.filter(agent=agent, release__published=True)
        .select_related("release__benchmark", "scorecard__card", "scorecard__agent_version")
        .order_by("release__benchmark__name", "-release__published_at", "release_id")
    )
