"""The leaderboard's ranking rule, and a streaming ranking of paper-gap runs (seed 000 tabs).

:func:`rank_key` is the one order of the boards: the site's standings
(``leaderboard.services.paper_gap_standings.standing_sort_key``) sort with it, and its SQL
(the per-version window, the incremental insert position) writes the same order
out. :func:`rank_runs` applies it to scored runs streamed one at a time: each
entrant's (agent version's) best run on the tab, ranked; memory grows with the
number of entrants, never with runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scoring.gap import ReleaseSpec, category_scores
from scoring.validate import fail, unit_interval

__all__ = ["TABS", "LeaderboardEntry", "RunRow", "rank_key", "rank_runs"]

TABS = ("overall", "reproduction", "open")


@dataclass(frozen=True)
class RunRow:
    """One scored run: who ran it and its per-task final scores."""

    entrant: str
    run_id: str
    finals: Mapping[str, float]
    pass_rate: float | None = None
    # Whether the run covers every required task of the release (seed 000 comparability).
    complete: bool = True
    # When the run was verified: any ordered value (the site passes a datetime).
    verified_at: Any = 0


@dataclass(frozen=True)
class LeaderboardEntry:
    """An entrant's best run for one tab, with all three category scores."""

    entrant: str
    run_id: str
    score: float
    overall: float | None
    reproduction: float | None
    open: float | None
    pass_rate: float | None
    complete: bool = True
    verified_at: Any = 0


def rank_key(
    *, complete: bool, score: float | None, pass_rate: float | None, verified_at: Any, run_id: Any
) -> tuple[Any, ...]:
    """Ascending = better: complete coverage first, score desc, pass rate desc (None last),
    verified earlier, then run id.

    Seed 000: "a run is not comparable to a full run unless coverage is complete", so
    every complete run ranks above every partial one; within each group the tab's score
    decides, then the pass rate, then who was verified first. The run id only makes the
    order total (two runs are never equal).
    """
    return (not complete, -(score or 0.0), pass_rate is None, -(pass_rate or 0.0), verified_at, run_id)


def rank_runs(rows: Iterable[RunRow], release: ReleaseSpec, *, tab: str = "overall") -> list[LeaderboardEntry]:
    """Rank each entrant's best run on ``tab`` ("overall", "reproduction", "open").

    Runs without a score on that tab are skipped.  An entrant's best run is
    the one with the smallest :func:`rank_key`, and the result is sorted by it:
    the order of the site's boards.
    """
    if tab not in TABS:
        raise fail("leaderboard", "tab", "one of 'overall', 'reproduction', 'open'", tab)
    # Per entrant: the best key so far with what its entry is built from (entries are built
    # once at the end, for the winners only).
    best: dict[str, tuple[tuple[Any, ...], RunRow, dict[str, float | None], float, float | None]] = {}
    for row in rows:
        categories = category_scores(release, row.finals)
        score = categories[tab]
        if score is None:
            continue
        rate = None if row.pass_rate is None else unit_interval(f"run {row.run_id!r}", "pass_rate", row.pass_rate)
        key = rank_key(
            complete=row.complete, score=score, pass_rate=rate, verified_at=row.verified_at, run_id=row.run_id
        )
        current = best.get(row.entrant)
        if current is None or key < current[0]:
            best[row.entrant] = (key, row, categories, score, rate)
    return [
        LeaderboardEntry(
            entrant=row.entrant,
            run_id=row.run_id,
            score=score,
            overall=categories["overall"],
            reproduction=categories["reproduction"],
            open=categories["open"],
            pass_rate=rate,
            complete=row.complete,
            verified_at=row.verified_at,
        )
        for _key, row, categories, score, rate in sorted(best.values(), key=lambda item: item[0])
    ]
