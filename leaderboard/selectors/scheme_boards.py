"""Scorecard and race boards as records, for their CSV/JSON exports and the API.

Each board is read through one selector, the same rows its page shows:

* scorecard board: ``leaderboard.selectors.scorecard.scorecard_board`` (the ScorecardStanding
  rows: each entrant's best card on a published release, private submissions left off);
* race Overall, race results and qualifying: the race pages' rows, behind the race
  embargo (seed 002: the raw race score "is the value shown in the race results after the
  reveal embargo ends"). Until a race is released none of its per-race values is given to
  anyone but staff; the Overall shown to everyone else is the one as of the latest race
  before which every started race is released (an Overall that folds in an embargoed race
  gives that race's delta away by subtraction).

``race_values_visible`` and ``race_overall_anchor`` are the race pages' own functions
(leaderboard.selectors.race), so the pages, the exports and the API cannot disagree.
"""

from __future__ import annotations

from typing import Any

from leaderboard.models import Benchmark, Race, Release
from leaderboard.selectors import race as race_selectors
from leaderboard.selectors import scorecard as scorecard_selectors
from leaderboard.users import Viewer
from scoring import scorecard as scorecard_scoring

SCORECARD_COLUMNS: tuple[str, ...] = (
    "rank",
    "agent",
    "agent_slug",
    "version",
    "verification",
    "episodes",
    "solved",
    "success_rate",
    "success_rate_ci_low",
    "success_rate_ci_high",
    "move_efficiency",
    "avg_steps_solved",
    "deadlock_rate_lower_bound",
    "total_actions",
    "closed_at",
)
OVERALL_COLUMNS: tuple[str, ...] = (
    "rank",
    "agent",
    "agent_slug",
    "version",
    "overall",
    "races_counted",
    "window",
    "top_agent",
)
RACE_RESULT_COLUMNS: tuple[str, ...] = (
    "rank",
    "agent",
    "agent_slug",
    "version",
    "raw_score",
    "baseline",
    "vs_field",
    "runs_included",
    "runs_excluded",
    "validator_keys",
    "validator_keys_revoked",
)
QUALIFYING_COLUMNS: tuple[str, ...] = ("agent", "agent_slug", "version", "score", "runs_included", "runs_excluded")


class RaceEmbargoed(Exception):
    """The race's values are under embargo for this viewer."""

    def __init__(self, race: Race) -> None:
        super().__init__(
            f"race {race.number} is {race.status}: its results are under embargo until the race is released"
        )
        self.race = race


# The embargo rule is the race pages' own (leaderboard.selectors.race): one rule, one place.
race_values_visible = race_selectors.race_values_visible
race_overall_anchor = race_selectors.race_overall_anchor


def scorecard_board_records(*, release: Release) -> list[dict[str, Any]]:
    """The scorecard board of ``release`` (one query: the page's own selector)."""
    records = []
    for row in scorecard_selectors.scorecard_board(release=release):
        card = row.card
        # Computed from the card's own counts (seed 001 stores none): the 95% Wilson interval.
        low, high = (
            scorecard_scoring.success_rate_interval(card.solved, card.episodes) if card.episodes else (None, None)
        )
        records.append(
            {
                "rank": row.rank,
                "agent": row.agent_name,
                "agent_slug": row.agent_slug,
                "version": row.version,
                "verification": card.level,
                "episodes": card.episodes,
                "solved": card.solved,
                "success_rate": card.success_rate,
                "success_rate_ci_low": low,
                "success_rate_ci_high": high,
                "move_efficiency": card.move_efficiency,
                "avg_steps_solved": card.avg_steps_solved,
                # Seed 001: the cheap corner test undercounts, so the rate is a lower bound.
                "deadlock_rate_lower_bound": card.deadlock_rate,
                "total_actions": card.total_actions,
                "closed_at": card.closed_at.isoformat() if card.closed_at else None,
            }
        )
    return records


def race_overall_records(
    *, benchmark: Benchmark, user: Viewer | None = None
) -> tuple[Race | None, list[dict[str, Any]]]:
    """The anchor race ``user`` may see and the Overall rows as of it (three queries)."""
    anchor = race_overall_anchor(benchmark=benchmark, user=user)
    if anchor is None:
        return None, []
    rows = [
        {
            "rank": row.rank,
            "agent": row.agent_version.agent.name,
            "agent_slug": row.agent_version.agent.slug,
            "version": row.agent_version.version,
            "overall": row.overall,
            "races_counted": row.races_counted,
            "window": row.window,
            "top_agent": row.is_top,
        }
        for row in race_selectors.overall_board(race=anchor)
    ]
    return anchor, rows


def race_result_records(*, race: Race, user: Viewer | None = None) -> list[dict[str, Any]]:
    """A race's raw results with baseline and vs Field; RaceEmbargoed unless ``user`` may see them."""
    if not race_values_visible(race, user):
        raise RaceEmbargoed(race)
    # Who signed what each raw score averages (key ids, space-separated), and which of those
    # keys were revoked since: a revoked key's runs keep counting, so a reader can weigh them.
    signers = race_selectors.race_result_signers(race=race)
    return [
        {
            "rank": result.rank,
            "agent": result.agent_version.agent.name,
            "agent_slug": result.agent_version.agent.slug,
            "version": result.agent_version.version,
            "raw_score": result.raw_score,
            "baseline": result.baseline,
            "vs_field": result.delta,
            "runs_included": result.runs_included,
            "runs_excluded": result.runs_excluded,
            "validator_keys": " ".join(signers.get(result.agent_version_id, ([], []))[0]),
            "validator_keys_revoked": " ".join(signers.get(result.agent_version_id, ([], []))[1]),
        }
        for result in race_selectors.race_results(race=race)
    ]


def qualifying_records(*, release: Release) -> list[dict[str, Any]]:
    """The qualifying board (public frozen task set: never embargoed)."""
    return [
        {
            "agent": row.agent_version.agent.name,
            "agent_slug": row.agent_version.agent.slug,
            "version": row.agent_version.version,
            "score": row.score,
            "runs_included": row.runs_included,
            "runs_excluded": row.runs_excluded,
        }
        for row in race_selectors.qualifying_board(release=release)
    ]


def race_record(race: Race) -> dict[str, Any]:
    """What any visitor may know of a race (its task ids only once released)."""
    return {
        "number": race.number,
        "name": race.name,
        "status": race.status,
        "released_at": race.released_at.isoformat() if race.released_at else None,
    }
