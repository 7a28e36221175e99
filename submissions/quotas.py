"""Daily submission limits, counted per account in the database.

Seed 001: submissions are "rate limited per key per day, which is what stops the
leaderboard from being farmed by resubmission". Keys are self-service here (an
account may hold up to 20 and revoke and re-create them at will), so a limit per
key would be a limit per nothing. The unit is therefore the **account**: all its
API keys and its browser uploads share one counter per benchmark per UTC day, and
creating or revoking keys cannot touch it. Validators file race runs for every
entrant, so each validator signing key has its own limit, set by staff
(SigningKey.daily_limit), counted by :func:`validator_quota_consume`.

Why PostgreSQL (the DailyCount table) and not the cache: a counter that lives in
Redis resets when Redis is flushed, restarted without persistence or evicts the
key, which would hand every account a fresh allowance. The database is already
the state machine of every upload; the counter lives beside it and, inside the
worker, commits or rolls back with the verdict it belongs to.

Counting is one atomic statement (an upsert):

    INSERT ... VALUES (subject, scope, day, 1)
    ON CONFLICT (subject, scope, day) DO UPDATE SET used = used + 1 WHERE used < limit
    RETURNING used

PostgreSQL locks the conflicting row and re-checks ``used < limit`` against its
latest committed value, so N concurrent requests get exactly ``limit`` rows back
and the rest none (tested with threads on PostgreSQL). A refused request changes
nothing. SQLite (the embedded default, 3.35+) runs the same statement; it
serialises writers anyway.

The day is the UTC calendar day: every limit resets at 00:00 UTC.

Bundle uploads (website and API) count through ``submission_upload``
(submissions.services.submissions), which consumes one unit before storing and
refunds it if the upload is refused; the scorecard-open endpoint calls
``quota_consume(user=..., api_key=..., scope=quota_scope(benchmark), limit=...)``
itself and answers QuotaExceeded with HTTP 429, Retry-After ``exc.retry_after``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from leaderboard.models import RaceRun, SigningKey
from submissions.models import ApiKey, DailyCount

# The scope validator race runs are counted under (one counter per validator key and day).
VALIDATOR_SCOPE = "race-runs"


@dataclass(frozen=True)
class QuotaResult:
    used: int
    limit: int
    remaining: int
    resets_at: dt.datetime


class QuotaExceeded(Exception):
    def __init__(self, retry_after: int, resets_at: dt.datetime, message: str) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.resets_at = resets_at
        self.message = message


def quota_scope(benchmark: Any) -> str:
    """The daily-limit scope of an upload to ``benchmark``: every upload path uses it, so all count alike."""
    return f"benchmark:{benchmark.slug}"


def next_reset(now: dt.datetime | None = None) -> dt.datetime:
    """The next UTC midnight after ``now``: when every daily limit resets."""
    now = now or timezone.now()
    today = now.astimezone(dt.UTC).date()
    return dt.datetime.combine(today + dt.timedelta(days=1), dt.time.min, tzinfo=dt.UTC)


def utc_day(now: dt.datetime | None = None) -> dt.date:
    return (now or timezone.now()).astimezone(dt.UTC).date()


def account_subject(user: Any) -> str:
    """The counter of an account: every key and the browser share it."""
    return f"user:{user.pk}"


def validator_subject(signing_key: Any) -> str:
    return f"validator-key:{signing_key.key_id}"


def _seconds_until(resets_at: dt.datetime, now: dt.datetime) -> int:
    return max(1, int((resets_at - now).total_seconds() + 0.999))


# One statement counts and checks (see the module docstring). A literal, not built: the
# table name is DailyCount's (asserted by the tests), every value a parameter.
_UPSERT = (
    "INSERT INTO submissions_dailycount (subject, scope, day, used, updated_at) VALUES (%s, %s, %s, 1, %s) "
    "ON CONFLICT (subject, scope, day) DO UPDATE SET used = submissions_dailycount.used + 1, "
    "updated_at = EXCLUDED.updated_at WHERE submissions_dailycount.used < %s RETURNING used"
)


def _increment(*, subject: str, scope: str, day: dt.date, limit: int, now: dt.datetime) -> int | None:
    """Add one to the counter unless it is already at ``limit``; the new count, or None when full."""
    if limit <= 0:
        return None
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_UPSERT, [subject, scope, day, now, limit])
        row = cursor.fetchone()
    return int(row[0]) if row else None


def _consume(*, subject: str, scope: str, limit: int, what: str) -> QuotaResult:
    now = timezone.now()
    resets_at = next_reset(now)
    used = _increment(subject=subject, scope=scope, day=utc_day(now), limit=limit, now=now)
    if used is None:
        retry_after = _seconds_until(resets_at, now)
        raise QuotaExceeded(
            retry_after,
            resets_at,
            f"Daily submission limit reached: {limit} per day for {what}. "
            f"The quota resets at {resets_at:%Y-%m-%d %H:%M} UTC (in {retry_after} seconds).",
        )
    return QuotaResult(used=used, limit=limit, remaining=limit - used, resets_at=resets_at)


def quota_consume(*, user: User, api_key: ApiKey | None, scope: str, limit: int) -> QuotaResult:
    """Count one submission against the account's allowance for ``scope`` today, or raise QuotaExceeded.

    ``scope`` names what the limit applies to (``quota_scope(benchmark)``, i.e.
    ``"benchmark:<slug>"``); ``limit`` is the allowance per UTC day (0 blocks every
    submission). ``api_key`` says which credential was used; it is not part of the
    count (every key of the account and the browser share the counter). The signature
    is stable: every upload path, and the scorecard-open endpoint, calls this.
    """
    return _consume(subject=account_subject(user), scope=scope, limit=limit, what=scope)


def quota_refund(*, user: User, api_key: ApiKey | None, scope: str, day: dt.date | None = None) -> None:
    """Give back one unit consumed on ``day`` (today by default): an upload refused after counting."""
    _decrement(subject=account_subject(user), scope=scope, day=day or utc_day())


def _decrement(*, subject: str, scope: str, day: dt.date) -> None:
    DailyCount.objects.filter(subject=subject, scope=scope, day=day, used__gt=0).update(
        used=F("used") - 1, updated_at=timezone.now()
    )


def quota_peek(*, user: User, api_key: ApiKey | None, scope: str, limit: int) -> QuotaResult:
    """Today's count of the account in ``scope``, without counting anything."""
    now = timezone.now()
    used = (
        DailyCount.objects.filter(subject=account_subject(user), scope=scope, day=utc_day(now))
        .values_list("used", flat=True)
        .first()
        or 0
    )
    return QuotaResult(used=used, limit=limit, remaining=max(0, limit - used), resets_at=next_reset(now))


def validator_quota_consume(*, signing_key: Any) -> QuotaResult:
    """Count one race run filed with a validator ``signing_key`` against its own daily limit."""
    return _consume(
        subject=validator_subject(signing_key),
        scope=VALIDATOR_SCOPE,
        limit=signing_key.daily_limit,
        what=f"validator key {signing_key.key_id}",
    )


def validator_quota_peek(*, signing_key: Any) -> QuotaResult:
    now = timezone.now()
    used = (
        DailyCount.objects.filter(subject=validator_subject(signing_key), scope=VALIDATOR_SCOPE, day=utc_day(now))
        .values_list("used", flat=True)
        .first()
        or 0
    )
    limit = signing_key.daily_limit
    return QuotaResult(used=used, limit=limit, remaining=max(0, limit - used), resets_at=next_reset(now))


@dataclass(frozen=True)
class BenchmarkQuota:
    """One row of the limits table on the upload and API-keys pages."""

    benchmark: Any
    used: int
    limit: int
    remaining: int
    resets_at: dt.datetime


def quota_overview(*, user: User, benchmarks: list[Any]) -> list[BenchmarkQuota]:
    """The account's limit, use and remainder today for each benchmark (one query)."""
    now = timezone.now()
    scopes = {quota_scope(benchmark): benchmark for benchmark in benchmarks}
    used = dict(
        DailyCount.objects.filter(subject=account_subject(user), day=utc_day(now), scope__in=scopes).values_list(
            "scope", "used"
        )
    )
    resets_at = next_reset(now)
    rows = []
    for scope, benchmark in scopes.items():
        limit = benchmark.daily_submission_limit
        count = used.get(scope, 0)
        rows.append(
            BenchmarkQuota(
                benchmark=benchmark, used=count, limit=limit, remaining=max(0, limit - count), resets_at=resets_at
            )
        )
    return rows


@dataclass(frozen=True)
class ValidatorKeyQuota:
    """A validator key's own limit of race runs today, shown to the accounts that file with it."""

    key_id: str
    validator: str
    used: int
    limit: int
    remaining: int


def validator_quota_overview(*, user: User) -> list[ValidatorKeyQuota]:
    """The active validator keys ``user`` has filed race runs with, each with today's use (two queries)."""
    keys = list(
        SigningKey.objects.filter(
            owner_kind=SigningKey.Owner.VALIDATOR,
            revoked_at__isnull=True,
            pk__in=RaceRun.objects.filter(submission__submitter=user).values("signing_key"),
        )
        .select_related("validator")
        .order_by("key_id")
    )
    today = utc_day()
    used = dict(
        DailyCount.objects.filter(
            subject__in=[validator_subject(key) for key in keys], scope=VALIDATOR_SCOPE, day=today
        ).values_list("subject", "used")
    )
    rows = []
    for key in keys:
        count = used.get(validator_subject(key), 0)
        rows.append(
            ValidatorKeyQuota(
                key_id=key.key_id,
                validator=key.validator.name if key.validator else "",
                used=count,
                limit=key.daily_limit,
                remaining=max(0, key.daily_limit - count),
            )
        )
    return rows
