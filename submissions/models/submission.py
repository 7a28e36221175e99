"""The Submission row is the state machine of one uploaded bundle.

received -> verifying -> done (with a verdict), or -> error (transient fault,
retried) -> verifying ... While verifying, the worker holds a renewed lease
(lease_owner, lease_expires_at; see submissions.services.verification).
A bundle is never deleted: whatever the verdict, the stored file and its SHA-256 stay, so nothing uploaded is ever lost.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models


class Submission(models.Model):
    class Kind(models.TextChoices):
        PAPER_GAP = "paper_gap"
        # (No "scorecard": scorecards are played on the server, never uploaded; docs/schemes.md.)
        RACE_RUN = "race_run"

    class Status(models.TextChoices):
        RECEIVED = "received"
        VERIFYING = "verifying"
        ERROR = "error", "Transient error (will retry)"
        DONE = "done"

    class Verdict(models.TextChoices):
        NONE = "", "Pending"
        REJECTED = "rejected"
        MISMATCH = "mismatch"
        VALIDATED = "validated"
        ATTESTED = "attested"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    submitter = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="submissions")
    api_key = models.ForeignKey(
        "submissions.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="submissions"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices, blank=True)
    # Known once the bundle's manifest is read.
    release = models.ForeignKey(
        "leaderboard.Release", null=True, blank=True, on_delete=models.PROTECT, related_name="submissions"
    )
    race = models.ForeignKey(
        "leaderboard.Race", null=True, blank=True, on_delete=models.PROTECT, related_name="submissions"
    )
    # The benchmark the uploader named, against whose daily allowance the upload was
    # counted; a bundle for another benchmark is rejected so no allowance can be borrowed.
    declared_benchmark = models.ForeignKey(
        "leaderboard.Benchmark", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The run this submission produced (none until verification accepts it). The one-to-one is
    # on this side so that the result models (leaderboard) never name submissions; its unique
    # constraint, with the Run created only under this row's lock when run_id is null
    # (submissions.services.runs), keeps one Run per submission however many workers race.
    run = models.OneToOneField(
        "leaderboard.Run", null=True, blank=True, on_delete=models.PROTECT, related_name="submission"
    )
    # Likewise the race run of a race_run submission (submissions.services.races).
    race_run = models.OneToOneField(
        "leaderboard.RaceRun", null=True, blank=True, on_delete=models.PROTECT, related_name="submission"
    )
    file = models.FileField(upload_to="bundles/%Y/%m/")
    original_name = models.CharField(max_length=255, blank=True)  # display only; never a path
    # Unique among uploads (the upload service's same-bytes check relies on it); a submission
    # carried onto another release by a rescore (``carried_from``) shares its source's file and hash.
    sha256 = models.CharField(max_length=64, db_index=True)
    size = models.BigIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RECEIVED)
    verdict = models.CharField(max_length=16, choices=Verdict.choices, default="", blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    # Field-by-field claimed-versus-recomputed comparison (scoring.compare).
    diff = models.JSONField(default=list, blank=True)
    # SHA-256 of the canonical evaluator results (signatures and challenge left out), set when
    # verification accepts the bundle: the same results from another account are refused
    # (``duplicate_results``), however they were re-sealed.
    results_digest = models.CharField(max_length=64, blank=True, db_index=True)
    # podium-bundle/1 or /2 as read from the manifest (empty until read).
    bundle_format = models.CharField(max_length=20, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    is_private = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    verifying_since = models.DateTimeField(null=True, blank=True)
    # The lease of the worker verifying this row: who (its task's token) and until when. The
    # worker's heartbeat renews it; once it lies in the past the worker is presumed dead and
    # the next claim takes over. Not cleared when done (a done row is never claimed).
    lease_owner = models.CharField(max_length=64, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Set on the row a rescore onto a newer release wrote (submissions.services.rescoring): the
    # uploaded submission whose stored bundle it re-verified. Never set on an upload.
    carried_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="carried_to")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "updated_at"]), models.Index(fields=["submitter", "-created_at"])]
        constraints = [
            # Once per account, not once per site: a stranger holding someone's sealed file and
            # uploading it first (refused at verification: the challenge is not theirs) must not
            # block its owner's upload of the same bytes.
            models.UniqueConstraint(
                fields=["submitter", "sha256"],
                condition=models.Q(carried_from__isnull=True),
                name="submission_uploaded_once_per_account",
            ),
            models.UniqueConstraint(fields=["carried_from", "release"], name="submission_carried_once_per_release"),
        ]

    def __str__(self) -> str:
        return f"submission {self.id} ({self.status} {self.verdict})"


class SignedResultDigest(models.Model):
    """The digest of one evaluator-signed result document of an accepted podium-bundle/1
    submission: the SHA-256 of the bytes its signature covers (``SignatureCheck.signed_sha256``,
    computed by the signature check anyway), so any copy that keeps the signature valid has the same
    digest, whatever its JSON spelling. A v1 signature binds no run,
    so one signed file taken out of a run and filed on its own (a partial run) would pass the
    whole bundle's ``results_digest``; each such document is accepted once
    (``submissions.services.challenges.results_duplicate_check``)."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="signed_result_digests")
    digest = models.CharField(max_length=64, db_index=True)

    def __str__(self) -> str:
        return f"{self.digest[:12]} of {self.submission_id}"


class SubmissionChallenge(models.Model):
    """A single-use nonce a harness asks for before a run.

    Bound to the account that asked, the benchmark, release (and race) and agent version;
    the bundle carries the token inside every signed object, so an evaluator's, judge's or
    validator's signature covers it with the results. A bundle is accepted only with an
    unexpired challenge of its uploader that no earlier submission used.
    """

    token = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="challenges")
    benchmark = models.ForeignKey("leaderboard.Benchmark", on_delete=models.CASCADE, related_name="+")
    release = models.ForeignKey("leaderboard.Release", on_delete=models.CASCADE, related_name="+")
    race = models.ForeignKey("leaderboard.Race", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    agent_version = models.ForeignKey("leaderboard.AgentVersion", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    submission = models.OneToOneField(
        Submission, null=True, blank=True, on_delete=models.SET_NULL, related_name="challenge"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"challenge {self.token[:8]}… for {self.agent_version}"
