"""Verdict notifications: an account's webhook and the delivery rows.

The NotificationDelivery row is the state machine of one message (one submission, one
channel): pending -> sent, or pending -> failed once the retries are spent. The task that
sends it loads the row and does nothing when it is no longer pending, so running it twice
sends at most once per successful attempt (a receiver may still see a retry of a POST whose
answer was lost: the ``X-Podium-Delivery`` header lets it drop duplicates).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class WebhookEndpoint(models.Model):
    """One account's webhook: where verdicts are POSTed and the secret that signs them.

    The secret must be kept in clear (HMAC needs it to sign); it is shown to the account
    once, when it is created or rotated, and never again (pages show only its first chars).
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook")
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"webhook of user {self.user_id}"


class NotificationDelivery(models.Model):
    class Channel(models.TextChoices):
        EMAIL = "email"
        WEBHOOK = "webhook"

    class State(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        FAILED = "failed"

    submission = models.ForeignKey("submissions.Submission", on_delete=models.CASCADE, related_name="notifications")
    channel = models.CharField(max_length=16, choices=Channel.choices)
    # Where it goes, frozen when the verdict was written (a later change of the account's
    # webhook or address does not redirect a message already owed).
    target = models.CharField(max_length=500)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True)  # never shown to the submitter verbatim
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)  # the last attempt: the sweeper's retry clock
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        verbose_name_plural = "notification deliveries"
        constraints = [models.UniqueConstraint(fields=["submission", "channel"], name="notification_once_per_channel")]

    def __str__(self) -> str:
        return f"{self.channel} for submission {self.submission_id} ({self.state})"
