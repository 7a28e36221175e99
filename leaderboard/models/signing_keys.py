"""Signing keys of evaluators, judges and validators: registry rows an admin registers, whose
scopes verification checks each signature against (submissions.services.signing_keys)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SigningKey(models.Model):
    """An Ed25519 public key registered by an admin for an evaluator, a judge or a validator.

    Every key is scoped: an evaluator key signs results only of tasks whose
    simulator is its evaluator's (narrowed to ``tasks`` when any are listed); a judge key
    signs faithfulness verdicts only of the tasks it is calibrated for (``tasks``, each with
    its rubric version); a validator key signs race runs only of ``benchmark``.
    """

    class Owner(models.TextChoices):
        EVALUATOR = "evaluator"
        VALIDATOR = "validator"
        JUDGE = "judge"

    owner_kind = models.CharField(max_length=16, choices=Owner.choices)
    evaluator = models.ForeignKey(
        "leaderboard.Evaluator", null=True, blank=True, on_delete=models.PROTECT, related_name="signing_keys"
    )
    validator = models.ForeignKey(
        "leaderboard.Validator", null=True, blank=True, on_delete=models.PROTECT, related_name="signing_keys"
    )
    # Judge keys: the judge's public identity (e.g. "llm-judge/2026-05"), shown per task result.
    judge_name = models.CharField(max_length=100, blank=True)
    # Validator keys: the one benchmark whose race runs the key may sign.
    benchmark = models.ForeignKey(
        "leaderboard.Benchmark", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # key_id: first 16 hex chars of SHA-256 of the raw 32-byte public key.
    key_id = models.CharField(max_length=16, unique=True)
    public_key = models.CharField(max_length=64)  # raw key, base64
    registered_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Validator keys only: race runs this key may file per UTC day (set by staff in the admin).
    # A validator runs every entrant on every race, so it has its own allowance instead of the
    # uploading account's small per-benchmark limit (submissions.quotas.validator_quota_consume).
    daily_limit = models.PositiveIntegerField(default=500)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(owner_kind="evaluator", evaluator__isnull=False, validator__isnull=True)
                    | models.Q(owner_kind="validator", validator__isnull=False, evaluator__isnull=True)
                    | models.Q(owner_kind="judge", validator__isnull=True, evaluator__isnull=True)
                ),
                name="signing_key_has_one_owner",
            )
        ]

    def __str__(self) -> str:
        owners: dict[str, object] = {
            self.Owner.EVALUATOR: self.evaluator,
            self.Owner.VALIDATOR: self.validator,
            self.Owner.JUDGE: self.judge_name,
        }
        owner = owners.get(self.owner_kind)
        return f"{self.owner_kind} {owner} key {self.key_id}"


class SigningKeyTask(models.Model):
    """One task a key is scoped to: for a judge key, a task it is calibrated for and the
    rubric version of that calibration; for an evaluator key, a narrowing of its simulator."""

    signing_key = models.ForeignKey(SigningKey, on_delete=models.CASCADE, related_name="task_scopes")
    task = models.ForeignKey("leaderboard.Task", on_delete=models.PROTECT, related_name="+")
    rubric_version = models.CharField(max_length=100, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["signing_key", "task"], name="signing_key_task_unique")]

    def __str__(self) -> str:
        return f"{self.signing_key.key_id} / {self.task.slug}"


class SigningKeyEvent(models.Model):
    """Append-only history of a signing key: who registered it, widened or changed its scope by
    registering it again, and revoked it, and when (written by submissions.services.signing_keys;
    never edited or deleted). Shown to staff on the key's admin page and in the staff API."""

    class Action(models.TextChoices):
        REGISTERED = "registered"
        SCOPE_ADDED = "scope_added"
        SCOPE_CHANGED = "scope_changed"
        REVOKED = "revoked"

    signing_key = models.ForeignKey(SigningKey, on_delete=models.PROTECT, related_name="events")
    action = models.CharField(max_length=16, choices=Action.choices)
    # None: a script (manage.py load_demo, a deploy job) acted, not an account.
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+")
    # What changed, e.g. "lift: rubric r1 -> r2"; never a secret (a key's public half is on its row).
    detail = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"key {self.signing_key_id} {self.action}"
