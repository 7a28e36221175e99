"""Benchmarks, evaluators, tasks and releases, in the seeds' vocabulary.

A Task holds the latest text of its task.yaml contract (seed 003); a
ReleaseTask snapshots what scoring needs for one release (anchor, cap,
penalties, genre, direction), so a published release never changes when a
later version of the task is synced.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


class Benchmark(models.Model):
    class Scheme(models.TextChoices):
        PAPER_GAP = "paper_gap", "Paper-gap"
        SCORECARD = "scorecard", "Episode scorecard"
        RACE = "race", "Race"

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    scheme = models.CharField(max_length=16, choices=Scheme.choices)
    # Seed 001: submissions are rate limited per day so a board cannot be farmed by
    # resubmission; counted per account (all its keys and the browser), per benchmark,
    # per UTC day, in the database (submissions.quotas).
    daily_submission_limit = models.PositiveIntegerField(default=10)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Evaluator(models.Model):
    """A simulator with a working evaluator, e.g. ``robosuite+robomimic``."""

    simulator = models.CharField(max_length=100, unique=True)
    name = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["simulator"]

    def __str__(self) -> str:
        return self.simulator


class Task(models.Model):
    class Platform(models.TextChoices):
        MANIPULATION = "manipulation"
        UAV = "uav"
        VEHICLE = "vehicle"
        QUADRUPED = "quadruped"

    class Direction(models.TextChoices):
        LEARNING = "learning"
        PLANNING = "planning"
        CONTROL = "control"
        NAVIGATION = "navigation"
        LOCOMOTION = "locomotion"

    class Genre(models.TextChoices):
        REPRODUCTION = "reproduction"
        OPEN = "open"

    class Mode(models.TextChoices):
        INTERACTIVE = "interactive"
        BATCH = "batch"
        READ_FROM_TASK_CONFIG = "read_from_task_config"

    class MetricDirection(models.TextChoices):
        HIGHER_IS_BETTER = "higher_is_better"
        LOWER_IS_BETTER = "lower_is_better"

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="tasks")
    slug = models.SlugField(max_length=100)
    title = models.CharField(max_length=300)
    platform = models.CharField(max_length=16, choices=Platform.choices)
    direction = models.CharField(max_length=16, choices=Direction.choices)
    simulator = models.ForeignKey(Evaluator, on_delete=models.PROTECT, related_name="tasks")
    genre = models.CharField(max_length=16, choices=Genre.choices)
    mode = models.CharField(max_length=32, choices=Mode.choices)
    metric_name = models.CharField(max_length=100)
    metric_direction = models.CharField(max_length=20, choices=MetricDirection.choices)
    paper_md = models.TextField()
    brief_md = models.TextField()
    sandbox_dockerfile = models.TextField(blank=True)
    # The parsed task.yaml with the anchor removed: safe to show visitors.
    contract = models.JSONField(default=dict)
    anchor_provenance = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["benchmark", "slug"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "slug"], name="task_unique_slug_per_benchmark")]

    def __str__(self) -> str:
        return self.slug


class Release(models.Model):
    class MissingTaskPolicy(models.TextChoices):
        EXCLUDE = "exclude", "Exclude missing tasks (seed default)"
        ZERO = "zero", "Count missing required tasks as 0"

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="releases")
    version = models.CharField(max_length=50)
    title = models.CharField(max_length=200, blank=True)
    notes = models.TextField(blank=True)
    # SHA-256 hex over the sorted required slugs joined by "\n" (scoring.gap.required_task_set_hash).
    required_task_set_hash = models.CharField(max_length=64)
    missing_task_policy = models.CharField(max_length=8, choices=MissingTaskPolicy.choices, default="exclude")
    default_score_cap = models.FloatField(default=1.5)
    budgets = models.JSONField(default=dict, blank=True)
    benchmark_versions = models.JSONField(default=dict, blank=True)
    # The normalized manifest as synced, and its hash: syncing the same manifest twice is a no-op.
    manifest = models.JSONField(default=dict)
    manifest_sha256 = models.CharField(max_length=64)
    published = models.BooleanField(default=False)
    published_at = models.DateTimeField(null=True, blank=True)
    # Scorecard benchmarks: the size of the hidden episode set every card is padded to.
    episode_set_size = models.PositiveIntegerField(null=True, blank=True)
    # Scorecard benchmarks: the operator's choice (admin, not the manifest) to show the
    # hidden level layouts on the replay pages of closed cards, e.g. once the set is retired.
    # Off: replays show moves and metrics only.
    reveal_hidden_levels = models.BooleanField(default=False)
    # Race benchmarks: the public frozen qualifying task set (seed 002), from release.yaml `qualifying.task_ids`.
    qualifying_task_ids = models.JSONField(default=list, blank=True)
    synced_at = models.DateTimeField(auto_now=True)
    synced_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Bumped whenever standings are recomputed; cache keys include it.
    generation = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["benchmark", "-published_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "version"], name="release_unique_version_per_benchmark")
        ]

    def __str__(self) -> str:
        return f"{self.benchmark.slug} {self.version}"


class ReleaseTask(models.Model):
    """One task as one release has it: its scoring contract and its own
    copy of the task's text (title, paper.md, brief.md, Dockerfile, mode, metric, provenance).

    Pages and the API render a release's tasks from these snapshot fields, never from the
    shared Task row, so syncing an unpublished release cannot change what a published one
    shows. The Task row carries the text of the newest *published* release that contains
    it (rewritten when a release is published), which is what /api/v1/tasks/ lists.
    """

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="release_tasks")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="release_tasks")
    position = models.PositiveIntegerField(default=0)
    # The text snapshot (seed 003's task.yaml, paper.md, brief.md, sandbox/Dockerfile).
    title = models.CharField(max_length=300, blank=True)
    platform = models.CharField(max_length=16, choices=Task.Platform.choices, blank=True)
    direction = models.CharField(max_length=16, choices=Task.Direction.choices, blank=True)
    simulator = models.ForeignKey(Evaluator, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    mode = models.CharField(max_length=32, choices=Task.Mode.choices, blank=True)
    metric_name = models.CharField(max_length=100, blank=True)
    paper_md = models.TextField(blank=True)
    brief_md = models.TextField(blank=True)
    sandbox_dockerfile = models.TextField(blank=True)
    contract = models.JSONField(default=dict, blank=True)  # the parsed task.yaml without the anchor
    anchor_provenance = models.TextField(blank=True)
    genre = models.CharField(max_length=16, choices=Task.Genre.choices)
    metric_direction = models.CharField(max_length=20, choices=Task.MetricDirection.choices)
    # The anchor. Null or anchor_published=False renders as "Not published" and
    # never leaves the server (pages, API, exports, error messages).
    paper_value = models.FloatField(null=True, blank=True)
    anchor_published = models.BooleanField(default=False)
    score_cap = models.FloatField(default=1.5)
    penalties = models.JSONField(default=list, blank=True)  # [{"metric": str, "limit": float}]
    # Human review gates of seed 003.
    anchor_signed_off_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    anchor_signed_off_at = models.DateTimeField(null=True, blank=True)
    faithfulness_calibrated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    faithfulness_calibrated_at = models.DateTimeField(null=True, blank=True)
    # The evidence each gate was passed on (seed 003), recorded per task by
    # leaderboard.services.release_gates and shown to staff beside the anchor's provenance.
    # Anchor sign-off: the table or figure of paper.md the anchor is traced to, the value the
    # hidden reference reproduced, and the relative tolerance it was accepted within.
    anchor_cited_source = models.CharField(max_length=300, blank=True)
    anchor_reproduced_value = models.FloatField(null=True, blank=True)
    anchor_tolerance = models.FloatField(null=True, blank=True)
    anchor_sign_off_note = models.TextField(blank=True)
    # Faithfulness calibration: which rubric version, and what its dry run showed.
    faithfulness_rubric_version = models.CharField(max_length=100, blank=True)
    faithfulness_dry_run_outcome = models.TextField(blank=True)

    class Meta:
        ordering = ["release", "position", "task__slug"]
        constraints = [models.UniqueConstraint(fields=["release", "task"], name="release_task_unique")]

    def __str__(self) -> str:
        return f"{self.release} / {self.task.slug}"

    SNAPSHOT_FIELDS = (
        "title",
        "platform",
        "direction",
        "mode",
        "metric_name",
        "paper_md",
        "brief_md",
        "sandbox_dockerfile",
        "contract",
        "anchor_provenance",
    )

    def save(self, *args: Any, **kwargs: Any) -> None:
        # A row created without a snapshot (a script or fixture that predates snapshots) takes
        # its task's text as it is now; release_sync always writes the manifest's own copy.
        if self._state.adding and not self.title and self.task_id is not None:
            for name in self.SNAPSHOT_FIELDS:
                setattr(self, name, getattr(self.task, name))
            if self.simulator_id is None:
                self.simulator_id = self.task.simulator_id
        super().save(*args, **kwargs)

    @property
    def public_paper_value(self) -> float | None:
        """The anchor only where the release publishes it."""
        return self.paper_value if self.anchor_published else None
