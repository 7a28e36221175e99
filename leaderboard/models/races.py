"""Server-side hidden data of scorecard (seed 001) and race (seed 002) benchmarks."""

from __future__ import annotations

from django.db import models

from leaderboard.models.registry import Benchmark, Release


class ScorecardLevel(models.Model):
    """One level of a scorecard release's hidden episode set. The optimal length
    is the server's own data (BFS at generation), never taken from a bundle."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="scorecard_levels")
    level_id = models.CharField(max_length=100)
    optimal_len = models.PositiveIntegerField()

    class Meta:
        ordering = ["release", "level_id"]
        constraints = [models.UniqueConstraint(fields=["release", "level_id"], name="scorecard_level_unique")]


class Validator(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)

    def __str__(self) -> str:
        return self.name


class Race(models.Model):
    class Status(models.TextChoices):
        SCHEDULED = "scheduled"
        RUNNING = "running"
        EMBARGOED = "embargoed"
        RELEASED = "released"

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="races")
    # The qualifying release (public frozen task set) this race belongs to.
    release = models.ForeignKey(Release, on_delete=models.PROTECT, related_name="races", null=True, blank=True)
    number = models.PositiveIntegerField()
    name = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.SCHEDULED)
    # The hidden task set pinned to this race; never shown before release.
    task_ids = models.JSONField(default=list)
    starts_at = models.DateTimeField(null=True, blank=True)
    ends_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    # Seed 002: Overall starts fresh at the launch race (the ramp).
    is_launch = models.BooleanField(default=False)
    challenge_margin = models.FloatField(default=0.02)

    class Meta:
        ordering = ["benchmark", "number"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "number"], name="race_unique_number")]

    def __str__(self) -> str:
        return f"{self.benchmark.slug} race {self.number}"
