"""Submitter API keys: generation, hashing, lifecycle and DRF authentication.

A key reads ``pdm_<prefix>_<secret>``. The prefix (12 hex characters) is
public, unique and indexed: it finds the row. The secret (43 URL-safe base64
characters, 256 bits) is stored only as HMAC-SHA-256 under SECRET_KEY. A slow
password hash buys nothing for a 256-bit random secret; the keyed hash means a
leaked database alone cannot even confirm a guessed key. Comparison is
constant-time (hmac.compare_digest).

Guessing is made expensive by counting failed attempts in the cache, per key
prefix *and* client address (``failure_ident``): past PODIUM_API_KEY_FAILURE_LIMIT
failures within PODIUM_API_KEY_FAILURE_WINDOW seconds, Api-Key requests naming
that prefix from that address are answered 429 before any key is looked at.
Keying on the address alone locked out every key user behind a shared proxy
(PODIUM_NUM_PROXIES unset: everyone has the proxy's address) once one client
sent bad keys; with the prefix in the key, an attacker locks out only the
prefixes they name, and a victim's prefix is not public (docs/security-model.md).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import logging
import math
import secrets
import time
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import DatabaseError, connection, transaction
from django.http import HttpRequest
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from leaderboard.unavailable import database_read_only
from submissions import rows
from submissions.models import ApiKey

logger = logging.getLogger(__name__)

KEY_SCHEME = "pdm"
AUTH_KEYWORD = "Api-Key"
PREFIX_HEX_CHARS = 12
SECRET_BYTES = 32
# last_used_at is written at most this often per key, so polling does not turn every read into a write.
LAST_USED_RESOLUTION_SECONDS = 60


class ApiKeyThrottled(exceptions.Throttled):
    default_code = "api_key_attempts_throttled"
    default_detail = "Too many failed attempts with this API key from this address."
    extra_detail_singular = "Try again in {wait} second."
    extra_detail_plural = "Try again in {wait} seconds."


@dataclass(frozen=True)
class IssuedKey:
    """A freshly created key. ``plaintext`` exists only here, once: show it and drop it."""

    api_key: ApiKey
    plaintext: str


def api_key_hash(secret: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), secret.encode(), hashlib.sha256).hexdigest()


def api_key_parse(raw: str) -> tuple[str, str] | None:
    """Split ``pdm_<prefix>_<secret>`` into (prefix, secret), or None if it is not shaped like a key."""
    parts = raw.split("_", 2)
    if len(parts) != 3 or parts[0] != KEY_SCHEME:
        return None
    prefix, secret = parts[1], parts[2]
    if len(prefix) != PREFIX_HEX_CHARS or any(c not in "0123456789abcdef" for c in prefix):
        return None
    if not 20 <= len(secret) <= 100:
        return None
    return prefix, secret


@transaction.atomic
def api_key_create(*, user: User, name: str) -> IssuedKey:
    name = name.strip()
    if not name:
        raise ValueError("name: expected a non-empty name for the key (e.g. 'ci-runner')")
    if len(name) > 100:
        raise ValueError("name: expected at most 100 characters")
    # 48 bits of prefix: a collision is astronomically rare, and the unique index catches it anyway.
    prefix = secrets.token_hex(PREFIX_HEX_CHARS // 2)
    secret = secrets.token_urlsafe(SECRET_BYTES)
    api_key = ApiKey.objects.create(user=user, name=name, prefix=prefix, key_hash=api_key_hash(secret))
    return IssuedKey(api_key=api_key, plaintext=f"{KEY_SCHEME}_{prefix}_{secret}")


@transaction.atomic
def api_key_revoke(*, user: User, key_id: int) -> ApiKey:
    """Revoke one of ``user``'s keys. Revoking twice keeps the first revocation time."""
    api_key = ApiKey.objects.select_for_update().get(pk=key_id, user=user)
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key


@lru_cache(maxsize=4)
def _key_with_user_sql(vendor: str) -> tuple[str, rows.Columns, rows.Columns]:
    """The statement of :func:`_key_with_user` for a database ``vendor`` (built once)."""
    user_model = get_user_model()
    key, user = rows.columns(ApiKey, "k"), rows.columns(user_model, "u")
    join = f"{rows.table(user_model, 'u')} ON {rows.column('u', user_model, 'id')} = {rows.column('k', ApiKey, 'user')}"
    where = f"{rows.column('k', ApiKey, 'prefix')} = %s"
    sql = f"SELECT {rows.select_list(key, user)} FROM {rows.table(ApiKey, 'k')} JOIN {join} WHERE {where}"  # noqa: S608
    return sql, key, user


def _key_with_user(prefix: str) -> ApiKey | None:
    """The key with ``prefix`` and its user, in one written-out statement (submissions.rows):
    every API request runs it, and the ORM's compilation of the join cost more than the
    query itself."""
    sql, key_cols, user_cols = _key_with_user_sql(connection.vendor)
    with rows.cursor() as cursor:
        cursor.execute(sql, [prefix])
        row = cursor.fetchone()
    if row is None:
        return None
    api_key, user = rows.instances(row, (ApiKey, key_cols), (get_user_model(), user_cols))
    api_key.user = user
    found: ApiKey = api_key
    return found


def api_key_valid(*, secret: str, key_hash: str | None, revoked: bool, user_active: bool) -> bool:
    """The one rule of whether a key is accepted: ``secret`` hashes to the stored hash (None:
    no key has the prefix), the key is not revoked and its user is active. Constant-time in
    the secret, and the hash is computed even when no row matched, so timing does not tell
    which prefixes exist."""
    candidate = api_key_hash(secret)
    stored = key_hash if key_hash is not None else "0" * 64
    return hmac.compare_digest(candidate, stored) and key_hash is not None and not revoked and user_active


def api_key_authenticate(raw: str) -> ApiKey | None:
    """The active key ``raw`` names, or None."""
    parsed = api_key_parse(raw)
    if parsed is None:
        return None
    prefix, secret = parsed
    api_key = _key_with_user(prefix)
    if not api_key_valid(
        secret=secret,
        key_hash=api_key.key_hash if api_key is not None else None,
        revoked=api_key is not None and api_key.revoked_at is not None,
        user_active=api_key is not None and api_key.user.is_active,
    ):
        return None
    return api_key


def api_key_record_use(*, key_id: int, last_used_at: dt.datetime | None) -> dt.datetime | None:
    """Write the key's last use when it is due (at most once per LAST_USED_RESOLUTION_SECONDS);
    returns the time written, or None."""
    now = timezone.now()
    if last_used_at is not None and (now - last_used_at).total_seconds() < LAST_USED_RESOLUTION_SECONDS:
        return None
    try:
        # A bookkeeping write on a request that may only read: a database that takes no writes
        # (a standby after a failover) must not turn every API-key read into an error. In a
        # savepoint, so a refusal leaves the caller's transaction usable.
        with transaction.atomic():
            ApiKey.objects.filter(pk=key_id).update(last_used_at=now)
    except DatabaseError as exc:
        if not database_read_only(exc):
            raise
        logger.warning("API key %s: last use not recorded, the database is read-only", key_id)
        return None
    return now


def api_key_touch(api_key: ApiKey) -> None:
    written = api_key_record_use(key_id=api_key.pk, last_used_at=api_key.last_used_at)
    if written is not None:
        api_key.last_used_at = written


def _failure_cache_key(ident: str) -> str:
    return f"podium:api-key-failures:{ident}"


def failed_attempts(ident: str) -> int:
    return int(cache.get(_failure_cache_key(ident), 0))


def failure_wait(ident: str) -> int:
    """Seconds until ``ident``'s failure window ends (its Retry-After): the window runs from its
    first failure, so a client told the whole window again 30 s into it waited twice as long."""
    window = settings.PODIUM_API_KEY_FAILURE_WINDOW
    ends = cache.get(_failure_cache_key(ident) + ":ends")
    if not isinstance(ends, (int, float)):
        return window
    return max(1, min(window, math.ceil(ends - time.time())))


def record_failed_attempt(ident: str) -> int:
    key = _failure_cache_key(ident)
    window = settings.PODIUM_API_KEY_FAILURE_WINDOW
    if cache.add(key, 0, timeout=window):
        cache.set(key + ":ends", time.time() + window, timeout=window)
    try:
        return int(cache.incr(key))
    except ValueError:  # expired between add and incr: start a new window
        if cache.add(key, 1, timeout=window):
            cache.set(key + ":ends", time.time() + window, timeout=window)
        return 1


def failure_ident(request: HttpRequest | Request, raw: str) -> str:
    """Whose failure count a bad ``Api-Key`` attempt adds to: the key prefix it names and the
    client address (DRF's reading, honouring PODIUM_NUM_PROXIES). Credentials that name no
    prefix share one bucket per address; legitimate clients never send those."""
    parsed = api_key_parse(raw)
    prefix = parsed[0] if parsed is not None else "-"
    # DRF's address reading uses only ``request.META``, the same on a Django request.
    return f"{prefix}@{BaseThrottle().get_ident(request) or ''}"  # type: ignore[arg-type]


def _api_key_words(request: HttpRequest | Request) -> list[bytes] | None:
    """The Authorization header split in words when it names the Api-Key scheme, else None."""
    # DRF's header reading uses only ``request.META``, the same on a Django request.
    header = get_authorization_header(request).split()  # type: ignore[arg-type]
    if not header or header[0].decode("latin-1").lower() != AUTH_KEYWORD.lower():
        return None
    return header


def _api_key_raw(words: list[bytes]) -> str:
    """The key the header's words carry ("" when malformed: not two words, or not ASCII)."""
    try:
        return words[1].decode("ascii") if len(words) == 2 else ""
    except UnicodeDecodeError:
        return ""


def _api_key_throttled(ident: str) -> bool:
    return failed_attempts(ident) >= settings.PODIUM_API_KEY_FAILURE_LIMIT


@dataclass(frozen=True)
class KeyClaim:
    """The key an ``Api-Key`` header names, before any database read."""

    prefix: str
    secret: str


def api_key_claim(request: HttpRequest) -> KeyClaim | None:
    """The key ``request`` names when :class:`ApiKeyAuthentication` would go on to look it up
    (an Api-Key header of a well-formed key, its prefix and address not throttled); None
    wherever that class would answer otherwise. Reads no row and records nothing.

    For a view outside DRF that serves only requests DRF would accept (the play API's
    action, submissions.api.scorecards): it reads the key's row with its own statement and
    accepts it by :func:`api_key_valid`; whenever it cannot, it hands the request to its
    DRF view, whose authentication refuses it and counts the failure exactly once."""
    words = _api_key_words(request)
    if words is None or len(words) != 2:
        return None
    raw = _api_key_raw(words)
    if _api_key_throttled(failure_ident(request, raw)):
        return None
    parsed = api_key_parse(raw)
    return KeyClaim(prefix=parsed[0], secret=parsed[1]) if parsed is not None else None


class ApiKeyAuthentication(BaseAuthentication):
    """``Authorization: Api-Key pdm_<prefix>_<secret>``."""

    def authenticate(self, request: Request) -> tuple[User, ApiKey] | None:
        words = _api_key_words(request)
        if words is None:
            return None
        raw = _api_key_raw(words)
        ident = failure_ident(request, raw)
        if _api_key_throttled(ident):
            raise ApiKeyThrottled(wait=failure_wait(ident))
        if len(words) != 2:
            record_failed_attempt(ident)
            raise exceptions.AuthenticationFailed("Malformed Authorization header: expected 'Api-Key <key>'.")
        api_key = api_key_authenticate(raw)
        if api_key is None:
            record_failed_attempt(ident)
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        api_key_touch(api_key)
        return api_key.user, api_key

    def authenticate_header(self, request: Request) -> str:
        return AUTH_KEYWORD
