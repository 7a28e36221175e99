"""Sign-in failure counters (the login throttle, leaderboard.services.login_throttle).

Counted in the database, not the cache: the throttle must hold while Redis is down
(a cache that fails open would let a password be guessed; one that fails closed would
lock everybody out), and the database is the one dependency a sign-in cannot do without.
"""

from __future__ import annotations

from django.db import models


class LoginFailureCounter(models.Model):
    """Failed sign-ins of one (username, client address) pair within a window.

    ``scope`` is a SHA-256 of the casefolded username and the address: people type
    passwords into the username field, and a hash keeps those out of the database.
    """

    scope = models.CharField(max_length=64, unique=True)
    failures = models.PositiveIntegerField(default=0)
    window_started_at = models.DateTimeField()
    # Set when failures reach the limit; until then every sign-in of this pair is refused,
    # the right password included.
    locked_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["window_started_at"])]

    def __str__(self) -> str:
        return f"{self.scope[:12]}: {self.failures} failure(s)"
