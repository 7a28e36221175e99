"""Scorecards played on the server (seed 001): a card, its episodes and every move.

The card row is the state machine (open -> closed) and the lock: every request
that reads or changes a card's play takes ``select_for_update`` on its Card row
first, so requests on one card run one at a time while other cards play in
parallel. Nothing here is written by a player's claim: steps, solved and
deadlocked come from scoring.sokoban applied by submissions.services.cards.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Card(models.Model):
    """One agent version's scorecard on one release, opened and played over the API."""

    class Status(models.TextChoices):
        OPEN = "open"
        CLOSED = "closed"

    class ClosedBy(models.TextChoices):
        PLAYER = "player", "closed by the player"
        EXPIRY = "expiry", "closed after the idle time"

    release = models.ForeignKey("leaderboard.Release", on_delete=models.PROTECT, related_name="cards")
    agent_version = models.ForeignKey("leaderboard.AgentVersion", on_delete=models.PROTECT, related_name="cards")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="scorecard_cards")
    # The key that opened the card (None: a browser session); kept for the audit trail.
    api_key = models.ForeignKey(
        "submissions.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="cards"
    )
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    closed_by = models.CharField(max_length=8, choices=ClosedBy.choices, blank=True)
    opened_at = models.DateTimeField(default=timezone.now)
    # Last reset or action: idle expiry counts from here.
    last_activity_at = models.DateTimeField(default=timezone.now)
    closed_at = models.DateTimeField(null=True, blank=True)
    # The scorecard run closing the card recorded (leaderboard's result model; the one-to-one
    # is here so leaderboard never names submissions). Set once, under the card's row lock.
    run = models.OneToOneField(
        "leaderboard.ScorecardRun", null=True, blank=True, on_delete=models.PROTECT, related_name="card"
    )

    class Meta:
        ordering = ["-opened_at", "-id"]
        indexes = [models.Index(fields=["status", "last_activity_at"], name="card_status_activity")]

    def __str__(self) -> str:
        return f"card {self.pk} ({self.status})"


class CardEpisode(models.Model):
    """One level played on a card. ``steps`` counts every action sent on it (a
    blocked move too, and across restarts); ``player``/``crates`` is the live state."""

    # No index of its own: the (card, level) constraint's index leads with the card.
    card = models.ForeignKey(Card, on_delete=models.CASCADE, related_name="episodes", db_index=False)
    level = models.ForeignKey("leaderboard.ScorecardLevel", on_delete=models.PROTECT, related_name="+")
    steps = models.PositiveIntegerField(default=0)
    restarts = models.PositiveIntegerField(default=0)
    solved = models.BooleanField(default=False)
    deadlocked = models.BooleanField(default=False)
    out_of_budget = models.BooleanField(default=False)
    # Ended unsolved because the player opened another level (one level at a time).
    abandoned = models.BooleanField(default=False)
    done = models.BooleanField(default=False)
    # scoring.sokoban.engine.State as cell numbers.
    player = models.PositiveIntegerField()
    crates = models.JSONField(default=list)
    started_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["card", "started_at", "id"]
        constraints = [models.UniqueConstraint(fields=["card", "level"], name="card_episode_unique_level")]

    def __str__(self) -> str:
        return f"card {self.card_id} episode {self.level_id}"


class CardMove(models.Model):
    """One recorded request on an episode, in order: an action or a reset.

    ``step`` is the episode's step count after it (a reset does not count);
    ``result`` is moved / pushed / blocked for an action, reset for a reset."""

    class Result(models.TextChoices):
        MOVED = "moved"
        PUSHED = "pushed"
        BLOCKED = "blocked"
        RESET = "reset"

    # No index of its own: the (episode, seq) constraint's index leads with the episode and
    # serves every lookup by episode, and each move (the play loop's one insert) would
    # otherwise write two indexes for the same thing.
    episode = models.ForeignKey(CardEpisode, on_delete=models.CASCADE, related_name="moves", db_index=False)
    seq = models.PositiveIntegerField()
    step = models.PositiveIntegerField()
    action = models.CharField(max_length=8)
    result = models.CharField(max_length=8, choices=Result.choices)
    solved = models.BooleanField(default=False)
    deadlocked = models.BooleanField(default=False)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["episode", "seq"]
        constraints = [models.UniqueConstraint(fields=["episode", "seq"], name="card_move_unique_seq")]

    def __str__(self) -> str:
        return f"{self.episode} #{self.seq} {self.action}"
