"""The sign-in throttle: failures per (username, client address), counted in the database.

* The PODIUM_LOGIN_FAILURE_LIMIT-th failure of a pair within
  PODIUM_LOGIN_FAILURE_WINDOW seconds locks that pair for PODIUM_LOGIN_LOCKOUT_SECONDS.
  While locked, a sign-in is refused *before* the password is checked, so the right
  password does not get in and the answer says nothing about the password.
* Keyed on username and address together: an attacker elsewhere cannot lock a user
  out of their own address, and guessing one account's password from one address
  costs a lockout every LIMIT tries. (Many addresses can still try LIMIT each; the
  window and the password hasher's cost bound that.)
* Counted in the database (leaderboard.models.LoginFailureCounter), so it neither
  fails open nor locks everyone out while Redis is down.
* A successful sign-in clears the pair's counter.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rest_framework.throttling import BaseThrottle

from leaderboard.models import LoginFailureCounter


def client_address(request: Any) -> str:
    """The client's address as every throttle reads it (REMOTE_ADDR, or the forwarded address
    PODIUM_NUM_PROXIES trusted proxies put in X-Forwarded-For): DRF's own reading, so the
    API's throttles and this one agree."""
    return str(BaseThrottle().get_ident(request) or "")


def login_scope(*, username: str, address: str) -> str:
    """The counter key of one (username, address) pair; the username is casefolded so case
    variants of one account share a counter."""
    return hashlib.sha256(f"{username.casefold()}\n{address}".encode()).hexdigest()


def login_locked_until(*, scope: str, now: datetime | None = None) -> datetime | None:
    """When the pair's lock ends, or None when it may sign in now."""
    now = now or timezone.now()
    locked = LoginFailureCounter.objects.filter(scope=scope, locked_until__gt=now).values_list(
        "locked_until", flat=True
    )
    return locked.first()


def _counter_created(*, scope: str, now: datetime) -> LoginFailureCounter:
    """The pair's counter row, inserted if missing, locked. An upsert (INSERT ... ON CONFLICT DO
    NOTHING), because two first failures of one pair at once both find no row: a plain INSERT
    made the second one an IntegrityError on the unique scope, a 500 (tests/website/test_login_throttle.py).
    The second insert waits for the first to commit and then counts on its row."""
    LoginFailureCounter.objects.bulk_create(
        [LoginFailureCounter(scope=scope, failures=0, window_started_at=now)], ignore_conflicts=True
    )
    counter = LoginFailureCounter.objects.select_for_update().filter(scope=scope).first()
    # None only when a successful sign-in of the pair deleted the row in between: start afresh.
    return counter or LoginFailureCounter(scope=scope, failures=0, window_started_at=now)


@transaction.atomic
def login_failure_record(*, scope: str, now: datetime | None = None) -> datetime | None:
    """Count one failed sign-in; returns the lock's end when this failure locked the pair."""
    now = now or timezone.now()
    window = timedelta(seconds=settings.PODIUM_LOGIN_FAILURE_WINDOW)
    counter = LoginFailureCounter.objects.select_for_update().filter(scope=scope).first()
    if counter is None:
        # Forget pairs whose window and lock are long over, so the table stays small.
        LoginFailureCounter.objects.filter(window_started_at__lt=now - 2 * window).exclude(
            locked_until__gt=now
        ).delete()
        counter = _counter_created(scope=scope, now=now)
    elif counter.window_started_at <= now - window and not (counter.locked_until and counter.locked_until > now):
        counter.failures, counter.window_started_at, counter.locked_until = 0, now, None
    counter.failures += 1
    if counter.failures >= settings.PODIUM_LOGIN_FAILURE_LIMIT and not (
        counter.locked_until and counter.locked_until > now
    ):
        counter.locked_until = now + timedelta(seconds=settings.PODIUM_LOGIN_LOCKOUT_SECONDS)
    counter.save()
    return counter.locked_until if counter.locked_until and counter.locked_until > now else None


def login_failures_clear(*, scope: str) -> None:
    """A successful sign-in: the pair starts afresh."""
    LoginFailureCounter.objects.filter(scope=scope).delete()
