"""Precomputed standings of the scorecard scheme (seed 001).

Pages never aggregate per request. ``scorecard_standing_update(release=, agent_id=)``
is called when one of an agent's cards closes (or changes level or privacy): it
recomputes that agent's best card and moves only the rows whose rank changes.
``scorecard_standings_refresh`` rebuilds a whole release from the card rows alone,
for repairs (``manage.py rebuild_standings``); running it twice, or after a crash
half-way (inside its transaction), lands on the same rows.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import F, QuerySet

from leaderboard.models import Release, ScorecardRun
from leaderboard.models.races import ScorecardStanding
from leaderboard.services.paper_gap_standings import LEADERBOARD_LEVELS
from scoring import scorecard as scorecard_scoring


def scorecard_from_run(run: ScorecardRun) -> scorecard_scoring.Scorecard:
    """The scoring view of a stored scorecard (the numbers the server closed)."""
    return scorecard_scoring.Scorecard(
        episodes=run.episodes,
        solved=run.solved,
        success_rate=run.success_rate,
        move_efficiency=run.move_efficiency,
        avg_steps_solved=run.avg_steps_solved,
        deadlock_rate=run.deadlock_rate,
        total_actions=run.total_actions,
    )


def _entrant_key(agent_id: int) -> str:
    # scoring.best_per_entrant breaks exact ties by entrant id as a string;
    # zero-padding keeps that order numeric (the older agent first).
    return f"{agent_id:012d}"


def _ranked_cards(release: Release) -> QuerySet[ScorecardRun]:
    """The cards of ``release`` that may rank (the one rule of the rebuild and the update): cards
    played on the server (submissions.services.cards; rows left by the retired self-reported
    bundle kind have no card) at a leaderboard level, on which at least one move was sent. A card
    opened and closed without a move measured nothing: it ranked, above cards that tried and
    failed (fewer actions), and filled the board with names (docs/schemes.md)."""
    return ScorecardRun.objects.filter(
        release=release, level__in=LEADERBOARD_LEVELS, card__isnull=False, total_actions__gt=0
    )


@transaction.atomic
def scorecard_standings_refresh(*, release: Release) -> int:
    """Rewrite a scorecard release's board: each agent's best card, ranked
    success desc, efficiency desc, deadlock asc (scoring.scorecard.rank_key).
    Returns the number of ranked agents."""
    # Serialize refreshes of one release: two verifications finishing together would
    # otherwise both delete and both re-insert the same rows.
    Release.objects.select_for_update().filter(pk=release.pk).first()
    runs = _ranked_cards(release).select_related("agent_version").order_by("created_at", "id")
    by_key: dict[tuple[str, int], ScorecardRun] = {}
    cards = []
    for run in runs:
        key = _entrant_key(run.agent_version.agent_id)
        card = scorecard_from_run(run)
        # best_per_entrant returns the very card objects it was given: remember each one's row.
        by_key[(key, id(card))] = run
        cards.append((key, card))
    ranked = scorecard_scoring.best_per_entrant(cards)
    ScorecardStanding.objects.filter(release=release).delete()
    ScorecardStanding.objects.bulk_create(
        ScorecardStanding(
            release=release,
            agent_id=int(key),
            scorecard=by_key[(key, id(card))],
            rank=position,
        )
        for position, (key, card) in enumerate(ranked, start=1)
    )
    Release.objects.filter(pk=release.pk).update(generation=F("generation") + 1)
    return len(ranked)


def _agent_best_card(release: Release, agent_id: int) -> ScorecardRun | None:
    """An agent's best public card on a release (the first of equal cards, as the rebuild keeps)."""
    best: tuple[tuple[float, int, float, float, int, float, int], ScorecardRun] | None = None
    for run in _ranked_cards(release).filter(agent_version__agent_id=agent_id).order_by("created_at", "id"):
        key = scorecard_scoring.rank_key(scorecard_from_run(run))
        if best is None or key < best[0]:
            best = (key, run)
    return None if best is None else best[1]


@transaction.atomic
def scorecard_standing_update(*, release: Release, agent_id: int) -> int:
    """Bring one agent's row of a scorecard release's board up to date (after one of its cards
    closed, or changed level or privacy); returns how many rows were written.

    Only that agent's cards are scored; the other rows are read (one per agent, never their
    cards) to place it, and only rows whose rank changes are written. The generation moves
    only when the board does. Same rows as ``scorecard_standings_refresh``.
    """
    Release.objects.select_for_update().filter(pk=release.pk).values_list("pk", flat=True).first()
    best = _agent_best_card(release, agent_id)
    rows = {row.agent_id: row for row in ScorecardStanding.objects.filter(release=release).select_related("scorecard")}
    mine = rows.get(agent_id)
    if mine is not None and best is not None and mine.scorecard_id == best.pk:
        return 0
    written = 0
    if mine is not None:
        del rows[agent_id]
        if best is None:
            mine.delete()
            written += 1
    cards = {key: scorecard_from_run(row.scorecard) for key, row in rows.items()}
    if best is not None:
        cards[agent_id] = scorecard_from_run(best)
    ordered = sorted(cards, key=lambda key: (scorecard_scoring.rank_key(cards[key]), _entrant_key(key)))
    moved = []
    for rank, key in enumerate(ordered, start=1):
        if key == agent_id:
            assert best is not None  # the agent is among the ranked cards only with a best card
            if mine is None or mine.pk is None:
                ScorecardStanding.objects.create(release=release, agent_id=agent_id, scorecard=best, rank=rank)
            else:
                ScorecardStanding.objects.filter(pk=mine.pk).update(scorecard=best, rank=rank)
            written += 1
        elif rows[key].rank != rank:
            rows[key].rank = rank
            moved.append(rows[key])
    ScorecardStanding.objects.bulk_update(moved, ["rank"])
    written += len(moved)
    if written:
        Release.objects.filter(pk=release.pk).update(generation=F("generation") + 1)
    return written
