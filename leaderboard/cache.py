"""The cache backend: Django's Redis cache, except that Redis being down is a miss.

Everything Podium keeps in the cache can be recomputed from the database (rendered
boards, the release pointer, chart data) or is a rate limit, so an unreachable
Redis, or one that refuses what it is asked (out of memory, a read-only replica),
must never turn a page, a read API call or an API-key check into a 500:

* reads answer the default (a miss: the caller recomputes from the database);
* writes are dropped (``set``/``add``/``delete`` answer as if nothing was stored);
* ``incr``/``decr`` raise ValueError, what Django's cache raises for a missing key,
  so counters built on ``add`` + ``incr`` take their "key vanished" path.

Consequences, decided on purpose (docs/deploy.md, docs/security-model.md): while
Redis is down the request throttles and the API-key failure throttle count nothing,
so they fail open. API keys are 256-bit random secrets compared under a keyed hash:
the throttle is defence in depth, not what makes guessing infeasible, while moving
it to the database would turn every guess into a write on the one service that must
stay up.

After a connection error the backend stops trying for ``RETRY_AFTER_SECONDS``
(per process), so a Redis host that stopped answering costs one timeout per
process per period, not one per cache call.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

logger = logging.getLogger("podium.cache")

# How long a process treats Redis as down after a connection error before trying again.
RETRY_AFTER_SECONDS = 5.0
# Every error Redis answers, not only a refused or timed-out connection: a Redis at its
# maxmemory with noeviction (OutOfMemoryError) or a read-only replica after a failover
# (ReadOnlyError) answers ResponseErrors, which were 500s on every page and API call.
UNAVAILABLE = (RedisError,)

T = TypeVar("T")


class CacheUnavailable(ValueError):
    """Raised by incr/decr while Redis is unreachable; a ValueError like a missing key."""


class FailSoftRedisCache(RedisCache):
    """RedisCache whose every operation degrades to a miss while Redis is unreachable."""

    _down_until = 0.0  # time.monotonic() before which Redis is assumed down (this process)

    def _soft(self, operation: Callable[[], T], fallback: T) -> T:
        if time.monotonic() < type(self)._down_until:
            return fallback
        try:
            return operation()
        except UNAVAILABLE as exc:
            type(self)._down_until = time.monotonic() + RETRY_AFTER_SECONDS
            logger.warning(
                "cache unavailable (%s); serving without it for %ss", type(exc).__name__, RETRY_AFTER_SECONDS
            )
            return fallback

    def get(self, key: Any, default: Any = None, version: int | None = None) -> Any:
        return self._soft(lambda: super(FailSoftRedisCache, self).get(key, default, version), default)

    def get_many(self, keys: Any, version: int | None = None) -> dict[Any, Any]:
        return self._soft(lambda: super(FailSoftRedisCache, self).get_many(keys, version), {})

    def has_key(self, key: Any, version: int | None = None) -> bool:
        return self._soft(lambda: super(FailSoftRedisCache, self).has_key(key, version), False)

    def set(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> None:
        self._soft(lambda: super(FailSoftRedisCache, self).set(key, value, timeout, version), None)

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        return self._soft(lambda: super(FailSoftRedisCache, self).add(key, value, timeout, version), False)

    def set_many(self, data: dict[Any, Any], timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> list[Any]:
        return self._soft(lambda: super(FailSoftRedisCache, self).set_many(data, timeout, version), list(data))

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        return self._soft(lambda: super(FailSoftRedisCache, self).touch(key, timeout, version), False)

    def delete(self, key: Any, version: int | None = None) -> bool:
        return self._soft(lambda: super(FailSoftRedisCache, self).delete(key, version), False)

    def delete_many(self, keys: Any, version: int | None = None) -> None:
        self._soft(lambda: super(FailSoftRedisCache, self).delete_many(keys, version), None)

    def clear(self) -> None:
        self._soft(lambda: super(FailSoftRedisCache, self).clear(), None)

    def incr(self, key: Any, delta: int = 1, version: int | None = None) -> int:
        value = self._soft(lambda: super(FailSoftRedisCache, self).incr(key, delta, version), None)
        if value is None:  # incr itself never returns None: the cache is down
            raise CacheUnavailable(f"cache unavailable: cannot count {key!r}")
        return value
