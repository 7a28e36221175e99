"""Rescoring: re-verify a release's stored bundles in bulk.

A Rescore is a two-stage job whose row is the state machine:
proposing -> proposed (every item has its before/after) -> applying -> applied.
Nothing on a run changes until staff apply a proposed rescore; the proposal is the
before/after diff they look at first.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Rescore(models.Model):
    class State(models.TextChoices):
        PROPOSING = "proposing"
        PROPOSED = "proposed"
        APPLYING = "applying"
        APPLIED = "applied"

    release = models.ForeignKey("leaderboard.Release", on_delete=models.PROTECT, related_name="rescores")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PROPOSING)
    reason = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    proposed_at = models.DateTimeField(null=True, blank=True)
    applied_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    applied_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"rescore {self.pk} of release {self.release_id} ({self.state})"


class RescoreItem(models.Model):
    class State(models.TextChoices):
        PENDING = "pending"  # not recomputed yet
        UNCHANGED = "unchanged"  # recomputation equals what the run shows
        CHANGED = "changed"  # apply would write ``after``
        FAILED = "failed"  # the stored bundle no longer opens or scores (error says why)
        APPLIED = "applied"

    rescore = models.ForeignKey(Rescore, on_delete=models.CASCADE, related_name="items")
    run = models.ForeignKey("submissions.Run", on_delete=models.PROTECT, related_name="+")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    # {"overall", "reproduction", "open", "pass_rate", "covered", "complete", "tasks": {slug: final}}
    before = models.JSONField(default=dict)
    after = models.JSONField(default=dict)
    breakdown = models.JSONField(default=dict)  # the full recomputed breakdown apply writes
    diff = models.JSONField(default=list)  # [{"path", "before", "after"}]
    error = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["rescore", "run"]
        constraints = [models.UniqueConstraint(fields=["rescore", "run"], name="rescore_item_once_per_run")]

    def __str__(self) -> str:
        return f"rescore {self.rescore_id} run {self.run_id} ({self.state})"
