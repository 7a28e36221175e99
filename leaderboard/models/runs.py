"""What a verified submission produces. Only validated, attested and verified
runs enter leaderboards; rejected submissions write no run rows."""

from __future__ import annotations

import datetime as dt
import secrets
import string

from django.conf import settings
from django.db import models

from leaderboard.reasons import PUBLIC_REASON_MAX_CHARS


class Run(models.Model):
    """A paper-gap run (seed 000): one agent version on one release."""

    class Level(models.TextChoices):
        VALIDATED = "validated"
        ATTESTED = "attested"
        VERIFIED = "verified"
        # Withdrawn by staff with a reason (submissions.services.reruns.run_level_change): off every board.
        REVOKED = "revoked"

    release = models.ForeignKey("leaderboard.Release", on_delete=models.PROTECT, related_name="runs")
    agent_version = models.ForeignKey("leaderboard.AgentVersion", on_delete=models.PROTECT, related_name="runs")
    level = models.CharField(max_length=16, choices=Level.choices)
    overall = models.FloatField(null=True)
    reproduction = models.FloatField(null=True)
    open = models.FloatField(null=True)
    pass_rate = models.FloatField(null=True)
    # {"overall": [lo, hi], "reproduction": [...], "open": [...]}
    confidence = models.JSONField(default=dict)
    covered = models.PositiveIntegerField()
    required = models.PositiveIntegerField()
    complete = models.BooleanField()
    # From manifest.json, which no evaluator or judge signs: submitter-reported runtime and tokens
    # (not the seed's gateway-recorded figures, which Podium never sees) and the submitter-declared
    # effort tier. Shown as such, never ranked on (docs/scoring.md, "Runtime and tokens").
    runtime_seconds = models.FloatField(null=True)
    tokens_in = models.BigIntegerField(null=True)
    tokens_out = models.BigIntegerField(null=True)
    effort_tier = models.CharField(max_length=50, blank=True)
    breakdown = models.JSONField(default=dict)  # the recomputed score_breakdown
    is_private = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    # Withdrawn by its submitter / hidden by staff (with a public reason): off every public
    # board. Invariant kept by submissions.services.visibility: is_private is True whenever
    # the submission is private, or either of these is set, so every public filter (standings,
    # agent lists, API, exports) that already excludes private runs excludes these too.
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    hidden_at = models.DateTimeField(null=True, blank=True)
    hidden_reason = models.CharField(max_length=PUBLIC_REASON_MAX_CHARS, blank=True)
    # Provenance of a run a rescore carried onto a newer release (submissions.services.rescoring):
    # the run on the older release it was re-verified from. Who carried it and when is its
    # first VerificationEvent (actor, created_at) and the RescoreItem that names it.
    carried_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="carried_to")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # Exactly one carried run per source run and target release, however often applied.
            models.UniqueConstraint(fields=["carried_from", "release"], name="run_carried_once_per_release")
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.level})"


class TaskResult(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="task_results")
    release_task = models.ForeignKey("leaderboard.ReleaseTask", on_delete=models.PROTECT, related_name="+")
    measured = models.FloatField()
    gap = models.FloatField()
    factors = models.JSONField(default=dict)  # {metric: factor}
    factor = models.FloatField()
    score = models.FloatField()
    final = models.FloatField()
    pass_rate = models.FloatField(null=True)
    episodes = models.PositiveIntegerField()
    faithful = models.BooleanField(null=True)
    # "valid" (registered key, good signature), "unsigned", "unregistered"
    signature = models.CharField(max_length=16, default="unsigned")
    signing_key = models.ForeignKey(
        "leaderboard.SigningKey", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The faithfulness gate's provenance (reproduction tasks): "judge_signed" when a judge key
    # calibrated for the task signed the verdict, "self_declared" when the runner wrote it.
    faithfulness_source = models.CharField(max_length=16, blank=True)
    judge = models.CharField(max_length=100, blank=True)
    rubric_version = models.CharField(max_length=100, blank=True)
    judge_key = models.ForeignKey(
        "leaderboard.SigningKey", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["run", "release_task__position"]
        constraints = [models.UniqueConstraint(fields=["run", "release_task"], name="task_result_unique")]

    def __str__(self) -> str:
        return f"run {self.run_id} task result {self.release_task_id}"


class RunEpisodes(models.Model):
    """A paper-gap run's evaluator episodes as the bootstrap reads them (scoring.uncertainty.
    pack_run_columns: per task its metric and declared safety rates per episode, and its
    faithfulness verdict), written at verification so the interval follow-up
    (submissions.services.runs.run_confidence_compute) reads one row instead of decrypting and
    parsing the bundle again; deleted once the run has its interval (the bundle stays the
    source). A table of its own: no page or export reading runs or task results carries these
    bytes. Never shown."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True, related_name="episodes")
    columns = models.BinaryField()

    def __str__(self) -> str:
        return f"run {self.run_id} episodes"


class VerificationEvent(models.Model):
    """Append-only, public log of a run's verification level: the automatic level, each
    official re-run (``rerun``), each downgrade or revocation by staff (``note`` = reason)."""

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="events")
    level = models.CharField(max_length=16, choices=Run.Level.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+")
    method = models.CharField(max_length=200)
    evidence_sha256 = models.CharField(max_length=64, blank=True)
    note = models.TextField(blank=True)
    rerun = models.ForeignKey(
        "leaderboard.OfficialRerun", null=True, blank=True, on_delete=models.PROTECT, related_name="events"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"run {self.run_id}: {self.level} by {self.method}"


class ScorecardRun(models.Model):
    """A closed scorecard (seed 001), padded to the release's hidden set: the
    metrics scoring.scorecard computed from the card's own recorded episodes."""

    release = models.ForeignKey("leaderboard.Release", on_delete=models.PROTECT, related_name="scorecards")
    agent_version = models.ForeignKey("leaderboard.AgentVersion", on_delete=models.PROTECT, related_name="scorecards")
    level = models.CharField(max_length=16, choices=Run.Level.choices)
    episodes = models.PositiveIntegerField()
    solved = models.PositiveIntegerField()
    success_rate = models.FloatField()
    move_efficiency = models.FloatField(null=True)
    avg_steps_solved = models.FloatField(null=True)
    deadlock_rate = models.FloatField()
    total_actions = models.PositiveIntegerField()
    confidence = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"scorecard run {self.pk} ({self.level})"

    @property
    def card_id(self) -> int | None:
        """The id of the card whose closing recorded this run (the card's one-to-one
        ``submissions.Card.run`` points here): the id the play API answered, which the
        scorecard pages are addressed by. None on rows closed from a retired self-reported
        ``scorecard`` bundle (before cards were played on the server); those are never ranked.
        Load with ``select_related("card")`` to read it without a query per row."""
        card = getattr(self, "card", None)  # the reverse accessor raises (an AttributeError) when there is none
        return card.pk if card is not None else None

    @property
    def closed_at(self) -> dt.datetime:
        """When the card closed, as the card API answers it: an idle card closed at its last
        activity plus the idle time, whenever the sweep or the next request recorded this row
        (``created_at``). A row without a card, or a card without the time: ``created_at``."""
        card = getattr(self, "card", None)
        closed = getattr(card, "closed_at", None)
        return closed if closed is not None else self.created_at


# A race run's public id: 16 random letters and digits (95 bits: unguessable). Not URL-safe
# base64, whose "-" first (1 id in 64) reads as an option on a command line
# (`exclude_race_runs --run -x...`).
RACE_RUN_PUBLIC_ID_CHARS = 16
_PUBLIC_ID_ALPHABET = string.ascii_letters + string.digits


def race_run_public_id() -> str:
    """A fresh public id for a race run: its address on the site."""
    return "".join(secrets.choice(_PUBLIC_ID_ALPHABET) for _ in range(RACE_RUN_PUBLIC_ID_CHARS))


class RaceRun(models.Model):
    """One validator's run of one agent version, on qualifying (race null) or a race."""

    # The run's address (/races/runs/<public_id>/), never its row number. Until a race is
    # released a visitor sees only each validator's first run of a version (a re-run says the
    # first was an infrastructure failure): with sequential addresses a hidden re-run was a gap
    # between two ids a visitor could open, pointing at the run just before it.
    public_id = models.CharField(
        max_length=RACE_RUN_PUBLIC_ID_CHARS, unique=True, default=race_run_public_id, editable=False
    )
    validator = models.ForeignKey("leaderboard.Validator", on_delete=models.PROTECT, related_name="runs")
    agent_version = models.ForeignKey("leaderboard.AgentVersion", on_delete=models.PROTECT, related_name="race_runs")
    release = models.ForeignKey("leaderboard.Release", on_delete=models.PROTECT, related_name="race_runs")
    race = models.ForeignKey("leaderboard.Race", null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    score = models.FloatField(null=True)
    # More than 30% environment/verifier errors: excluded, marked for re-run (seed 002).
    infrastructure_failure = models.BooleanField(default=False)
    needs_rerun = models.BooleanField(default=False)
    failed = models.BooleanField(default=False)  # the sandbox produced no output at all
    # Size of the expected task set (race.task_ids, or the qualifying release's tasks) and
    # how many outcomes ended in an environment or verifier error.
    expected_tasks = models.PositiveIntegerField(default=0)
    infrastructure_errors = models.PositiveIntegerField(default=0)
    # The validator key that signed the run's outcomes (owner_kind=validator).
    signing_key = models.ForeignKey(
        "leaderboard.SigningKey", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Excluded by staff with a public reason (leaderboard.services.race_exclusions), typically
    # because the validator key that signed it was compromised: it stays listed, marked, and
    # counts nowhere (no raw score, baseline, Overall or qualifying score includes it).
    excluded_at = models.DateTimeField(null=True, blank=True)
    excluded_reason = models.CharField(max_length=PUBLIC_REASON_MAX_CHARS, blank=True)
    excluded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    def __str__(self) -> str:
        return f"race run {self.pk}"

    @property
    def status(self) -> str:
        """scoring.race run status: "ok", "failed" or "infrastructure_failure"."""
        if self.failed:
            return "failed"
        if self.infrastructure_failure:
            return "infrastructure_failure"
        return "ok"


class RaceTaskOutcome(models.Model):
    run = models.ForeignKey(RaceRun, on_delete=models.CASCADE, related_name="outcomes")
    task_id = models.CharField(max_length=100)
    reward = models.FloatField()
    paid_reward = models.FloatField()
    verdict_status = models.CharField(max_length=50)  # "accepted", "rejected" or "" (no graded order)
    order_placed = models.BooleanField(default=False)
    agent_error = models.BooleanField(default=False)
    # Embargoed for race episodes until the race is released (seed 002).
    failure_category = models.CharField(max_length=50, blank=True)
    step_limit_hit = models.BooleanField(default=False)
    time_limit_hit = models.BooleanField(default=False)
    env_error = models.BooleanField(default=False)
    verifier_error = models.BooleanField(default=False)

    class Meta:
        ordering = ["run", "task_id"]

    def __str__(self) -> str:
        return f"race run {self.run_id} task {self.task_id}"


class OfficialRerun(models.Model):
    """An official re-run of a paper-gap run: the re-run's own evaluator
    results, recomputed by the server, and their per-task comparison with the submitted run.

    ``breakdown`` is the recomputed score_breakdown of the re-run; ``comparison`` one row
    per task ``{"task", "submitted_final", "rerun_final", "difference", "within"}`` (plus the
    measured values, shown only where the run page shows measured values). The run becomes
    ``verified`` only when every submitted task is re-run within ``tolerance``.
    """

    class Source(models.TextChoices):
        BUNDLE = "bundle", "re-run bundle (same format as a submission)"
        ENTERED = "entered", "results entered by staff"

    class Outcome(models.TextChoices):
        CONFIRMED = "confirmed", "every task within tolerance"
        DISAGREES = "disagrees", "at least one task outside tolerance or missing"

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="reruns")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+")
    source = models.CharField(max_length=16, choices=Source.choices)
    # SHA-256 of the re-run bundle as uploaded, or of the canonical JSON of the entered results.
    evidence_sha256 = models.CharField(max_length=64)
    bundle = models.FileField(upload_to="reruns/", blank=True)
    tolerance = models.FloatField()
    breakdown = models.JSONField(default=dict)
    comparison = models.JSONField(default=list)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "created_at", "id"]

    def __str__(self) -> str:
        return f"re-run {self.pk} of run {self.run_id}: {self.outcome}"
