"""Daily submission limits (seed 001: "rate limited per key per day").

One counter per (who, scope, UTC day) in Django's cache: Redis in production
(REDIS_URL or a redis CELERY_BROKER_URL), process-local memory in the embedded
default. ``who`` is the API key when the request carries one, else the user, so
a browser upload and each key have their own allowance.

Counting is atomic: ``cache.add`` creates the counter (SET NX with an expiry
just past the reset) and ``cache.incr`` is Redis INCR, so N concurrent
requests see N distinct values and exactly ``limit`` of them are <= limit. A
request over the limit leaves the counter where it was (decremented back), so
rejected attempts do not eat tomorrow's allowance or confuse ``quota_peek``.

Usage from any upload path (API, website, scheme endpoints)::

    try:
        result = quota_consume(user=user, api_key=key, scope=f"benchmark:{slug}", limit=benchmark.daily_limit)
    except QuotaExceeded as exc:
        ...  # HTTP 429, Retry-After: exc.retry_after, body exc.message
    try:
        submission_create(...)
    except SubmissionRejected:
        quota_refund(user=user, api_key=key, scope=...)  # a rejected upload does not count
        raise
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.cache import cache
from django.utils import timezone

from submissions.models import ApiKey

# Kept a little past midnight so a counter never vanishes before its day ends.
EXPIRY_SLACK_SECONDS = 120


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


def next_reset(now: dt.datetime | None = None) -> dt.datetime:
    """The next UTC midnight after ``now``."""
    now = now or timezone.now()
    today = now.astimezone(dt.UTC).date()
    return dt.datetime.combine(today + dt.timedelta(days=1), dt.time.min, tzinfo=dt.UTC)


def _owner(user: AbstractBaseUser, api_key: ApiKey | None) -> str:
    return f"key:{api_key.pk}" if api_key is not None else f"user:{user.pk}"


def _counter_key(user: AbstractBaseUser, api_key: ApiKey | None, scope: str, now: dt.datetime) -> str:
    day = now.astimezone(dt.UTC).date().isoformat()
    return f"podium:quota:{day}:{_owner(user, api_key)}:{scope}"


def _seconds_until(resets_at: dt.datetime, now: dt.datetime) -> int:
    return max(1, int((resets_at - now).total_seconds() + 0.999))


def quota_consume(*, user: AbstractBaseUser, api_key: ApiKey | None, scope: str, limit: int) -> QuotaResult:
    """Count one submission against today's allowance or raise QuotaExceeded.

    ``scope`` names what the limit applies to (e.g. ``"benchmark:ale-robotics"``);
    ``limit`` is the allowance per UTC day (0 blocks every submission).
    """
    now = timezone.now()
    resets_at = next_reset(now)
    key = _counter_key(user, api_key, scope, now)
    ttl = _seconds_until(resets_at, now) + EXPIRY_SLACK_SECONDS
    used = 0
    for _ in range(3):
        cache.add(key, 0, timeout=ttl)
        try:
            used = int(cache.incr(key))
            break
        except ValueError:  # evicted between add and incr; create it again
            continue
    else:  # pragma: no cover - a cache that keeps losing keys
        raise QuotaExceeded(60, resets_at, "The submission counter is unavailable; try again in a minute.")
    if used > limit:
        cache.decr(key)
        retry_after = _seconds_until(resets_at, now)
        raise QuotaExceeded(
            retry_after,
            resets_at,
            f"Daily submission limit reached: {limit} per day for {scope}. "
            f"The quota resets at {resets_at:%Y-%m-%d %H:%M} UTC (in {retry_after} seconds).",
        )
    return QuotaResult(used=used, limit=limit, remaining=limit - used, resets_at=resets_at)


def quota_refund(*, user: AbstractBaseUser, api_key: ApiKey | None, scope: str) -> None:
    """Give back one unit consumed today (an upload that was refused after counting)."""
    key = _counter_key(user, api_key, scope, timezone.now())
    try:
        if int(cache.get(key, 0)) > 0:
            cache.decr(key)
    except ValueError:
        pass


def quota_peek(*, user: AbstractBaseUser, api_key: ApiKey | None, scope: str, limit: int) -> QuotaResult:
    now = timezone.now()
    used = int(cache.get(_counter_key(user, api_key, scope, now), 0))
    return QuotaResult(used=used, limit=limit, remaining=max(0, limit - used), resets_at=next_reset(now))
