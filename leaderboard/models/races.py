"""Server-side hidden data of scorecard (seed 001) and race (seed 002) benchmarks."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from leaderboard.models.registry import Benchmark, Release


class ScorecardLevel(models.Model):
    """One level of a scorecard release's hidden episode set: its XSB text and
    the optimal length BFS computed at manifest sync (never a player's claim).

    The text leaves the server only to the player of an open card, one level
    at a time (submissions.services.cards), and on the replay page of a
    closed card when the operator set Release.reveal_hidden_levels."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="scorecard_levels")
    level_id = models.CharField(max_length=100)
    optimal_len = models.PositiveIntegerField()
    xsb = models.TextField(default="")

    class Meta:
        ordering = ["release", "level_id"]
        constraints = [models.UniqueConstraint(fields=["release", "level_id"], name="scorecard_level_unique")]

    def __str__(self) -> str:
        return f"{self.level_id} (optimal {self.optimal_len})"


class Validator(models.Model):
    slug = models.SlugField(max_length=100, unique=True)
    name = models.CharField(max_length=200)
    # The accounts that act for this validator: they see the runs it owes (re-runs after an
    # infrastructure failure) and may ask for race-run challenges. Set by staff.
    accounts = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="validators")

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


class ScorecardStanding(models.Model):
    """An entrant's (agent's) best closed scorecard on one release, ranked (seed 001
    "Ranking"). Rewritten by leaderboard.services.scorecard_standings and race_standings; never edited by hand."""

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="scorecard_standings")
    agent = models.ForeignKey("leaderboard.Agent", on_delete=models.CASCADE, related_name="+")
    scorecard = models.ForeignKey("leaderboard.ScorecardRun", on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField()

    class Meta:
        ordering = ["release", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["release", "agent"], name="scorecard_standing_unique_agent"),
        ]

    def __str__(self) -> str:
        return f"{self.release} #{self.rank}"


class RaceResult(models.Model):
    """One agent version's raw result in one race (seed 002 layers 2 and 3).

    raw_score is the mean of the included successful validator runs; baseline is
    the race's field baseline (top-half average), delta = raw_score - baseline.
    Rows exist only for versions with at least one included run."""

    race = models.ForeignKey(Race, on_delete=models.CASCADE, related_name="results")
    agent_version = models.ForeignKey("leaderboard.AgentVersion", on_delete=models.CASCADE, related_name="+")
    raw_score = models.FloatField()
    rank = models.PositiveIntegerField()
    baseline = models.FloatField()
    delta = models.FloatField()
    runs_included = models.PositiveIntegerField()
    runs_excluded = models.PositiveIntegerField()

    class Meta:
        ordering = ["race", "rank"]
        constraints = [models.UniqueConstraint(fields=["race", "agent_version"], name="race_result_unique")]

    def __str__(self) -> str:
        return f"{self.race} #{self.rank}"


class OverallStanding(models.Model):
    """The three-race Overall of one agent version as of one (anchor) race.

    The Overall page anchors to the running race while one is live, else to the
    most recent completed race; every race keeps its own rows so the history is
    reproducible. is_top marks the holder of the top spot after the challenge
    margin rule (at most one row per race)."""

    race = models.ForeignKey(Race, on_delete=models.CASCADE, related_name="overall_standings")
    agent_version = models.ForeignKey("leaderboard.AgentVersion", on_delete=models.CASCADE, related_name="+")
    overall = models.FloatField()
    rank = models.PositiveIntegerField()
    races_counted = models.PositiveIntegerField()
    window = models.PositiveIntegerField()
    is_top = models.BooleanField(default=False)

    class Meta:
        ordering = ["race", "rank"]
        constraints = [models.UniqueConstraint(fields=["race", "agent_version"], name="overall_standing_unique")]

    def __str__(self) -> str:
        return f"Overall after {self.race} #{self.rank}"


class RaceEntry(models.Model):
    """An agent version entered in one race by the account that owns its agent (seed 002:
    "your Overall score is tied to the agent version you submitted"). A validator's run of a
    version counts in a race only when the version is entered in it."""

    race = models.ForeignKey(Race, on_delete=models.CASCADE, related_name="entries")
    agent_version = models.ForeignKey("leaderboard.AgentVersion", on_delete=models.CASCADE, related_name="race_entries")
    entered_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="race_entries")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["race", "created_at"]
        constraints = [models.UniqueConstraint(fields=["race", "agent_version"], name="race_entry_unique")]

    def __str__(self) -> str:
        return f"{self.agent_version} in {self.race}"


class QualifyingEntry(models.Model):
    """An agent version its owning account registered for the qualifying runs of one race
    benchmark (the public frozen task set, no race). A validator's qualifying run of a version
    counts only when the version is registered here, so a run never publishes an agent name or
    version on the qualifying board without its owner's consent (an agent known only from a
    private run elsewhere stays private)."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="qualifying_entries")
    agent_version = models.ForeignKey(
        "leaderboard.AgentVersion", on_delete=models.CASCADE, related_name="qualifying_entries"
    )
    entered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="qualifying_entries"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["benchmark", "created_at"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "agent_version"], name="qualifying_entry_unique")]

    def __str__(self) -> str:
        return f"{self.agent_version} for qualifying on {self.benchmark}"
