"""Precomputed leaderboard rows.

Written when a run is verified (never aggregated per request); a page reads a
release's rows for one tab with a constant number of queries. Release.generation
is bumped with every rewrite and keys any cache built on these rows.
"""

from __future__ import annotations

from django.db import models

from leaderboard.models.agents import AgentVersion
from leaderboard.models.registry import Release


class Standing(models.Model):
    class Tab(models.TextChoices):
        OVERALL = "overall"
        REPRODUCTION = "reproduction"
        OPEN = "open"

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="standings")
    tab = models.CharField(max_length=16, choices=Tab.choices)
    run = models.ForeignKey("submissions.Run", on_delete=models.CASCADE, related_name="standings")
    agent_version = models.ForeignKey(AgentVersion, on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField()
    score = models.FloatField(null=True)
    ci_low = models.FloatField(null=True)
    ci_high = models.FloatField(null=True)
    pass_rate = models.FloatField(null=True)
    covered = models.PositiveIntegerField()
    required = models.PositiveIntegerField()
    complete = models.BooleanField()
    # Denormalized for display so a page needs no joins.
    agent_name = models.CharField(max_length=200)
    agent_slug = models.CharField(max_length=100)
    version = models.CharField(max_length=100)
    runtime_seconds = models.FloatField(null=True)
    tokens = models.BigIntegerField(null=True)
    effort_tier = models.CharField(max_length=50, blank=True)
    verification = models.CharField(max_length=16)
    verified_at = models.DateTimeField()

    class Meta:
        ordering = ["release", "tab", "rank"]
        constraints = [models.UniqueConstraint(fields=["release", "tab", "run"], name="standing_unique_run")]
        # The board sorts by any column; an index per sortable column keeps a cold
        # page on a 10,000-run release from sorting every row per request.
        # Not rank: a verified run moves the ranks below its row (one UPDATE), and a
        # column no index covers lets PostgreSQL update those rows in place (HOT, with
        # the free space the table keeps: migration standing_fillfactor) instead of writing a new entry
        # in every index for every moved row (about 10x the cost). The rank order is the
        # score order within complete/partial, which the score index serves.
        indexes = [
            models.Index(fields=["release", "tab", "score"]),
            models.Index(fields=["release", "tab", "pass_rate"]),
            models.Index(fields=["release", "tab", "runtime_seconds"]),
            models.Index(fields=["release", "tab", "tokens"]),
            models.Index(fields=["release", "tab", "verified_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.release_id} {self.tab} #{self.rank} {self.agent_name} {self.version}"
