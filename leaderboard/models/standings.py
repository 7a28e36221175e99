"""Precomputed leaderboard rows.

Written when a run is verified (never aggregated per request); a page reads a
release's rows for one tab with a constant number of queries. Release.generation
is bumped with every change and keys any cache built on these rows.

No rank is stored: a row's rank is its place in the rank order within its release
and tab, computed when read (leaderboard.selectors.standing_ranks), so placing a
new best run writes one row instead of renumbering every row below it.
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Value
from django.db.models.functions import Coalesce

from leaderboard.models.agents import AgentVersion
from leaderboard.models.registry import Release

# A pass rate is a fraction in [0, 1]: -1 puts a row without one last in a descending order,
# on every database and in an index (leaderboard.selectors.standing_ranks.RANK_ORDER).
PASS_RATE_OR_NONE_LAST = Coalesce(F("pass_rate"), Value(-1.0))


class Standing(models.Model):
    # Not a column: the rank is annotated when read (selectors.standing_ranks.with_rank); declared
    # here so type checking knows the attribute every ranked read carries.
    rank: int

    class Tab(models.TextChoices):
        OVERALL = "overall"
        REPRODUCTION = "reproduction"
        OPEN = "open"

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="standings")
    tab = models.CharField(max_length=16, choices=Tab.choices)
    run = models.ForeignKey("leaderboard.Run", on_delete=models.CASCADE, related_name="standings")
    agent_version = models.ForeignKey(AgentVersion, on_delete=models.CASCADE, related_name="+")
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
        # The rank order (leaderboard.selectors.standing_ranks.RANK_ORDER).
        ordering = [
            "release",
            "tab",
            F("complete").desc(),
            "-score",
            PASS_RATE_OR_NONE_LAST.desc(),
            "verified_at",
            "run_id",
        ]
        constraints = [models.UniqueConstraint(fields=["release", "tab", "run"], name="standing_unique_run")]
        # The board sorts by any column; an index per sortable column keeps a cold
        # page on a 10,000-run release from sorting every row per request. The first
        # serves the rank order: a page in rank order (and its ROW_NUMBER()) reads the
        # rows in index order and stops at the page's end.
        indexes = [
            models.Index(
                F("release"),
                F("tab"),
                F("complete").desc(),
                F("score").desc(),
                PASS_RATE_OR_NONE_LAST.desc(),
                F("verified_at").asc(),
                F("run").asc(),
                name="standing_rank_order",
            ),
            models.Index(fields=["release", "tab", "score"]),
            models.Index(fields=["release", "tab", "pass_rate"]),
            models.Index(fields=["release", "tab", "runtime_seconds"]),
            models.Index(fields=["release", "tab", "tokens"]),
            models.Index(fields=["release", "tab", "verified_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.release_id} {self.tab} {self.agent_name} {self.version}"
