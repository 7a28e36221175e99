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
    # Null: re-verify the release's runs in place. Set: carry them onto this newer release of
    # the same benchmark (corrected inputs are published as a new version); apply creates one
    # run per source run there and leaves the source runs as they are.
    target_release = models.ForeignKey(
        "leaderboard.Release", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.PROPOSING)
    reason = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    proposed_at = models.DateTimeField(null=True, blank=True)
    applied_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    applied_at = models.DateTimeField(null=True, blank=True)
    # When its computation was last handed to a worker: the sweeper hands a rescore still
    # proposing back only once this is old (a lost enqueue), not while a worker computes it.
    enqueued_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        onto = f" onto {self.target_release.version}" if self.target_release is not None else ""
        return f"rescore {self.pk} of {self.release}{onto} ({self.state})"


class RescoreItem(models.Model):
    class State(models.TextChoices):
        PENDING = "pending"  # not recomputed yet
        # Recomputation equals what the run shows (carrying: apply still creates the run).
        UNCHANGED = "unchanged"
        CHANGED = "changed"  # apply would write ``after`` (carrying: create the run with it)
        # The stored bundle no longer opens or scores, or (carrying) the run cannot be carried
        # onto the target release; ``error`` starts with the code and says why.
        FAILED = "failed"
        APPLIED = "applied"

    rescore = models.ForeignKey(Rescore, on_delete=models.CASCADE, related_name="items")
    run = models.ForeignKey("leaderboard.Run", on_delete=models.PROTECT, related_name="+")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    # {"overall", "reproduction", "open", "pass_rate", "covered", "complete", "tasks": {slug: final}}
    before = models.JSONField(default=dict)
    after = models.JSONField(default=dict)
    breakdown = models.JSONField(default=dict)  # the full recomputed breakdown apply writes
    diff = models.JSONField(default=list)  # [{"path", "before", "after"}]
    error = models.CharField(max_length=300, blank=True)
    # A carrying rescore: the run apply created on the target release.
    carried_run = models.ForeignKey(
        "leaderboard.Run", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["rescore", "run"]
        constraints = [models.UniqueConstraint(fields=["rescore", "run"], name="rescore_item_once_per_run")]

    def __str__(self) -> str:
        return f"rescore {self.rescore_id} run {self.run_id} ({self.state})"
