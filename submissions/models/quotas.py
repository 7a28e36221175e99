from __future__ import annotations

from django.db import models


class DailyCount(models.Model):
    """How many uploads one subject made in one scope on one UTC day (submissions.quotas).

    ``subject`` is ``"user:<id>"`` for an account (all its API keys and the browser
    together) or ``"validator-key:<key_id>"`` for a validator's signing key. A string
    rather than two nullable foreign keys because the atomic upsert needs a unique
    constraint over non-null columns (NULLs never conflict). Rows are counters, never
    deleted by key creation or revocation: that is what makes the limit per account.
    """

    subject = models.CharField(max_length=100)
    scope = models.CharField(max_length=200)
    day = models.DateField()
    used = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["subject", "scope", "day"], name="daily_count_unique")]

    def __str__(self) -> str:
        return f"{self.subject} {self.scope} {self.day}: {self.used}"
