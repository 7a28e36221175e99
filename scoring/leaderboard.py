"""Streaming leaderboard aggregation for paper-gap runs (seed 000 tabs).

:func:`rank_runs` consumes scored runs one at a time (a generator is fine),
keeps only each entrant's best run for the requested tab, and returns the
ranked rows.  Memory grows with the number of entrants, never with runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scoring.gap import ReleaseSpec, category_scores
from scoring.validate import fail, unit_interval

__all__ = ["TABS", "LeaderboardEntry", "RunRow", "entry_key", "rank_runs"]

TABS = ("overall", "reproduction", "open")


@dataclass(frozen=True)
class RunRow:
    """One scored run: who ran it and its per-task final scores."""

    entrant: str
    run_id: str
    finals: Mapping[str, float]
    pass_rate: float | None = None


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


def entry_key(entry: LeaderboardEntry) -> tuple[float, int, float, str, str]:
    """Ascending = better: score desc, pass rate desc (None last), entrant, run id."""
    rate = entry.pass_rate
    has_rate = 0 if rate is not None else 1
    return (-entry.score, has_rate, -(rate if rate is not None else 0.0), entry.entrant, entry.run_id)


def rank_runs(rows: Iterable[RunRow], release: ReleaseSpec, *, tab: str = "overall") -> list[LeaderboardEntry]:
    """Rank each entrant's best run on ``tab`` ("overall", "reproduction", "open").

    Runs without a score on that tab are skipped.  An entrant's best run is
    the one with the smallest :func:`entry_key`; equal keys keep the first
    run seen.  The result is sorted by :func:`entry_key`.
    """
    if tab not in TABS:
        raise fail("leaderboard", "tab", "one of 'overall', 'reproduction', 'open'", tab)
    best: dict[str, tuple[tuple[float, int, float, str, str], LeaderboardEntry]] = {}
    for row in rows:
        categories = category_scores(release, row.finals)
        score = categories[tab]
        if score is None:
            continue
        rate = None if row.pass_rate is None else unit_interval(f"run {row.run_id!r}", "pass_rate", row.pass_rate)
        entry = LeaderboardEntry(
            entrant=row.entrant,
            run_id=row.run_id,
            score=score,
            overall=categories["overall"],
            reproduction=categories["reproduction"],
            open=categories["open"],
            pass_rate=rate,
        )
        key = entry_key(entry)
        current = best.get(row.entrant)
        if current is None or key[:3] < current[0][:3]:
            best[row.entrant] = (key, entry)
    return [entry for _, entry in sorted(best.values(), key=lambda item: item[0])]
