from __future__ import annotations

from django.conf import settings
from django.db import models


class SigningKey(models.Model):
    """An Ed25519 public key registered by an admin for an evaluator or a validator."""

    class Owner(models.TextChoices):
        EVALUATOR = "evaluator"
        VALIDATOR = "validator"

    owner_kind = models.CharField(max_length=16, choices=Owner.choices)
    evaluator = models.ForeignKey(
        "leaderboard.Evaluator", null=True, blank=True, on_delete=models.PROTECT, related_name="signing_keys"
    )
    validator = models.ForeignKey(
        "leaderboard.Validator", null=True, blank=True, on_delete=models.PROTECT, related_name="signing_keys"
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
                ),
                name="signing_key_has_one_owner",
            )
        ]

    def __str__(self) -> str:
        owner = self.evaluator if self.owner_kind == self.Owner.EVALUATOR else self.validator
        return f"{self.owner_kind} {owner} key {self.key_id}"


class ApiKey(models.Model):
    """A submitter's API key. Only a hash is stored; the key is shown once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)  # public lookup part, shown in the UI
    key_hash = models.CharField(max_length=128)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix})"
