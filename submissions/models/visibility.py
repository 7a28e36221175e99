"""Withdrawn and hidden runs: the append-only log of who took a run off
the public boards (or put it back), when and why. Run.withdrawn_at / Run.hidden_at hold the
current state; these rows are the history, never edited or deleted."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class RunVisibilityEvent(models.Model):
    class Action(models.TextChoices):
        WITHDRAWN = "withdrawn"
        RESTORED = "restored"
        HIDDEN = "hidden"
        UNHIDDEN = "unhidden"

    run = models.ForeignKey("leaderboard.Run", on_delete=models.PROTECT, related_name="visibility_events")
    action = models.CharField(max_length=16, choices=Action.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+")
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"run {self.run_id} {self.action}"
