"""Reads of a closed scorecard card for its pages: the card, its episodes and the replay of
one episode (the game server's rows, submissions.models.scorecards)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import Http404

from leaderboard.api_query import MAX_ID
from leaderboard.models import ScorecardRun
from leaderboard.selectors.visibility import viewer_is_staff as _is_staff
from leaderboard.selectors.visibility import viewer_is_submitter
from scoring.scorecard import step_budget
from scoring.sokoban import parse_xsb
from submissions.models import CardEpisode, CardMove


def scorecard_get(*, pk: int, user: Any = None) -> ScorecardRun:
    """A closed card by its card id (the id the play API answers). Open cards have no page:
    their episodes are still being played."""
    if pk > MAX_ID:  # beyond a bigint the database would raise instead of finding nothing
        raise Http404("No such scorecard")
    card = (
        ScorecardRun.objects.select_related("release__benchmark", "agent_version__agent", "card")
        .filter(card__pk=pk)
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
    if card.card_id is None:  # closed from a retired self-reported bundle: no recorded episodes
        return []
    rows = CardEpisode.objects.filter(card__run=card).select_related("level").order_by("started_at", "id")
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


def _may_see_moves(card: ScorecardRun, user: Any) -> bool:
    """Who sees an episode's actions while the hidden set is not revealed: the card's
    player (who sent them) and staff. Anyone else would get a tested solution of a
    hidden level, which is as good as its layout."""
    if card.release.reveal_hidden_levels:
        return True
    return _is_staff(user) or (card.card is not None and viewer_is_submitter(card.card.owner_id, user))


def scorecard_replay(*, card: ScorecardRun, level_id: str, user: Any = None) -> dict[str, Any]:
    """What the replay page draws (docs/schemes.md "Replay").

    ``layout`` (walls, goals, start) only when the operator revealed the release's
    hidden set (Release.reveal_hidden_levels); the card is closed by construction
    (only closed cards have a ScorecardRun). ``moves`` always carries step numbers,
    server times and where the episode was solved or deadlocked; the action and its
    result only for a viewer allowed by :func:`_may_see_moves`."""

    episode = (
        CardEpisode.objects.filter(card__run=card, level__level_id=level_id).select_related("level").first()
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
