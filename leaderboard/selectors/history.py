"""History charts: a paper-gap release's leader over time, and a race benchmark's rolling
Overall of its top agent versions across released races.

Paper-gap boards keep no snapshot per day; they need none. A Standing row's place is a
function of that row alone (complete before partial, then score, then verification
time: leaderboard.services.paper_gap_standings), so the leader at any moment is the best-ranked of
the rows verified by then, and the series is exact for the rows on the board today. It
reads the Overall tab's Standing rows, which hold only what the board shows (a run with
an unsigned result on a withheld anchor is never ranked), minus private runs, as the API
leaderboard does. One query.

Race boards: only released races count, and only the released races before which every
started race is released too (the Overall after race N folds in the deltas of races
N-2..N, so an Overall after an embargoed race would give that race's delta away by
subtraction). This is the public-anchor rule of the race pages' embargo; it applies to
staff too, as a chart is a public artefact. Two queries.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from leaderboard.models import Benchmark, Race, Release, Standing
from leaderboard.models.races import OverallStanding
from leaderboard.selectors.race import pick_public_anchor
from leaderboard.selectors.standing_ranks import with_rank

HISTORY_DEFAULT_N = 5
HISTORY_MAX_N = 20
_STARTED = (Race.Status.RUNNING, Race.Status.EMBARGOED, Race.Status.RELEASED)


@dataclass(frozen=True)
class LeaderPoint:
    at: Any  # datetime the leadership changed (the new leader's verification time)
    score: float | None
    label: str
    run_id: int


@dataclass(frozen=True)
class TopPoint:
    rank: int
    at: Any
    score: float | None
    label: str
    run_id: int


@dataclass
class ReleaseHistory:
    leader: list[LeaderPoint] = field(default_factory=list)
    top: list[TopPoint] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        return {
            "leader": [
                {"at": p.at.isoformat(), "score": p.score, "label": p.label, "run_id": p.run_id} for p in self.leader
            ],
            "top": [
                {"rank": p.rank, "at": p.at.isoformat(), "score": p.score, "label": p.label, "run_id": p.run_id}
                for p in self.top
            ],
        }


def release_history(*, release: Release, n: int = HISTORY_DEFAULT_N) -> ReleaseHistory:
    """The leader of ``release``'s Overall board over time, and today's top ``n`` with the
    times they were verified (one query)."""
    # Private runs never have a row (standings_refresh), so excluding them leaves the whole tab
    # and the window numbers it as the board does.
    rows = list(
        with_rank(
            Standing.objects.filter(release=release, tab=Standing.Tab.OVERALL).exclude(run__is_private=True),
            whole_tab=True,
        )
        .order_by("verified_at", "rank", "id")  # type: ignore[misc]  # "rank" is with_rank's annotation
        .values_list("rank", "verified_at", "score", "agent_name", "version", "run_id")
    )
    history = ReleaseHistory()
    best_rank: int | None = None
    for rank, verified_at, score, name, version, run_id in rows:
        if best_rank is None or rank < best_rank:
            best_rank = rank
            history.leader.append(LeaderPoint(at=verified_at, score=score, label=f"{name} {version}", run_id=run_id))
    top = sorted(rows, key=lambda row: row[0])[:n]
    history.top = [
        TopPoint(rank=rank, at=at, score=score, label=f"{name} {version}", run_id=run_id)
        for rank, at, score, name, version, run_id in top
    ]
    return history


def released_race_prefix(races: list[Race]) -> list[Race]:
    """The started races, in number order, up to the race pages' public anchor
    (leaderboard.selectors.race.pick_public_anchor: the latest released race before which
    every started race is released); empty when there is none."""

    anchor = pick_public_anchor(races)
    if anchor is None:
        return []
    return sorted((r for r in races if r.status in _STARTED and r.number <= anchor.number), key=lambda r: r.number)


@dataclass(frozen=True)
class OverallSeries:
    label: str
    agent_slug: str
    version: str
    # One value per race of RaceHistory.races (None: no Overall row after that race).
    overall: list[float | None]
    rank: int  # the version's rank after the last race shown


@dataclass
class RaceHistory:
    races: list[Race]
    series: list[OverallSeries]

    def record(self) -> dict[str, Any]:
        return {
            "races": [
                {
                    "number": race.number,
                    "name": race.name,
                    "released_at": race.released_at.isoformat() if race.released_at else None,
                }
                for race in self.races
            ],
            "series": [
                {
                    "label": s.label,
                    "agent_slug": s.agent_slug,
                    "version": s.version,
                    "rank": s.rank,
                    "overall": s.overall,
                }
                for s in self.series
            ],
        }


def race_overall_history(*, benchmark: Benchmark, n: int = HISTORY_DEFAULT_N) -> RaceHistory:
    """The Overall of the top ``n`` agent versions (as of the latest public race) after each
    public race (released_race_prefix); two queries."""
    races = released_race_prefix(list(Race.objects.filter(benchmark=benchmark)))
    if not races:
        return RaceHistory(races=[], series=[])
    index = {race.pk: position for position, race in enumerate(races)}
    last = races[-1].pk
    rows = list(
        OverallStanding.objects.filter(race_id__in=index)
        .select_related("agent_version__agent")
        .order_by("race__number", "rank", "pk")
    )
    top_ids = [row.agent_version_id for row in rows if row.race_id == last][:n]
    series: dict[int, OverallSeries] = {}
    for row in rows:
        if row.race_id == last and row.agent_version_id in top_ids:
            version = row.agent_version
            series[row.agent_version_id] = OverallSeries(
                label=f"{version.agent.name} {version.version}",
                agent_slug=version.agent.slug,
                version=version.version,
                overall=[None] * len(races),
                rank=row.rank,
            )
    for row in rows:
        if row.agent_version_id in series:
            series[row.agent_version_id].overall[index[row.race_id]] = row.overall
    ordered = sorted(series.values(), key=lambda s: s.rank)
    return RaceHistory(races=races, series=ordered)
