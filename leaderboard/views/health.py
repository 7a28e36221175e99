"""Readiness: can this process serve, with every service it depends on?

``/healthz`` (leaderboard.views.paper_gap) stays trivial: the process answers. A load
balancer or orchestrator takes a host out of rotation on ``/readyz`` instead:
it checks the database, the cache's and the broker's Redis, the bundle
storage and (in production) the static files' manifest, each bounded by a short
timeout, and answers 200 or 503 naming what failed. The answer never carries an
error's text (it could name hosts or credentials); the reason is logged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import redis
from django.conf import settings
from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage
from django.core.files.storage import FileSystemStorage, default_storage
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

logger = logging.getLogger("podium.readyz")

# Seconds a Redis ping may take before the check counts as failed.
REDIS_TIMEOUT_SECONDS = 1.0
OK, FAILED, SKIPPED = "ok", "unavailable", "not configured"
# What the Redis check writes (and lets expire).
READY_KEY, READY_KEY_SECONDS = "podium:readyz", 10


def check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return OK


def _ping_redis(url: str) -> str:
    if not url.startswith(("redis://", "rediss://", "unix://")):
        return SKIPPED
    client = redis.Redis.from_url(
        url, socket_connect_timeout=REDIS_TIMEOUT_SECONDS, socket_timeout=REDIS_TIMEOUT_SECONDS
    )
    try:
        # A write, not a PING: a Redis at its maxmemory (noeviction) or a read-only replica
        # answers PING but refuses the cache's writes and every enqueue.
        client.set(READY_KEY, "1", ex=READY_KEY_SECONDS)
    finally:
        client.close()
    return OK


def check_cache() -> str:
    """The cache's Redis (pinged directly: the cache backend itself turns an outage into misses)."""
    return _ping_redis(settings.REDIS_URL) if settings.REDIS_URL else SKIPPED


def check_broker() -> str:
    """The Celery broker; in-process tasks (no broker configured) need none."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return SKIPPED
    return _ping_redis(settings.CELERY_BROKER_URL)


def check_storage() -> str:
    """The bundle storage answers a listing (S3: the bucket exists and the credentials work)."""
    try:
        default_storage.listdir("")
    except FileNotFoundError:
        # A local media root nothing was stored in yet: the first upload creates it.
        # default_storage is a lazy proxy: the backend it wraps is what the check needs.
        if not isinstance(default_storage._wrapped, FileSystemStorage):  # type: ignore[attr-defined]
            raise
    return OK


# The stylesheet every page links: its hashed name is in collectstatic's manifest or nowhere.
STYLESHEET = "podium.css"


def check_static() -> str:
    """In production every page links hashed static files named by collectstatic's manifest,
    which this process read at start: without it every page answered 500 ("Missing staticfiles
    manifest entry") while the other checks said ready (a host restored before collectstatic,
    or started before it ran). The embedded default serves files as they are: nothing to check."""
    if not isinstance(staticfiles_storage, ManifestFilesMixin):
        return SKIPPED
    staticfiles_storage.stored_name(STYLESHEET)  # ValueError: not in the manifest this process holds
    return OK


CHECKS: dict[str, Callable[[], str]] = {
    "database": check_database,
    "cache": check_cache,
    "broker": check_broker,
    "storage": check_storage,
    "static": check_static,
}


# Seconds the whole readiness answer may wait for its checks: a service that stops answering
# without refusing (a frozen host: a stopped storage server, a database behind a stalled
# proxy) held the probe until gunicorn killed its worker (a 500 after 60 s), and a few such
# probes took every web worker of the host with them.
READY_TIMEOUT_SECONDS = 3.0
# The checks run on these threads, never on the request's: a check stuck on a frozen service
# keeps its thread, and once all are stuck a probe fails at once instead of adding another.
_CHECK_THREADS = ThreadPoolExecutor(max_workers=len(CHECKS) * 2, thread_name_prefix="readyz")


def _run_check(check: Callable[[], str]) -> str:
    try:
        return check()
    finally:
        connection.close()  # this thread's own database connection (a probe's, not kept open)


@never_cache
@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    futures = {name: _CHECK_THREADS.submit(_run_check, check) for name, check in CHECKS.items()}
    results: dict[str, str] = {}
    for name, future in futures.items():
        try:
            results[name] = future.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            future.cancel()  # not started yet (every thread stuck): it never will be
            logger.warning("readiness check %s failed: no answer within %g s", name, READY_TIMEOUT_SECONDS)
            results[name] = FAILED
        except Exception as exc:  # every failure is a "not ready", whatever raised it
            logger.warning("readiness check %s failed: %s: %s", name, type(exc).__name__, exc)
            results[name] = FAILED
    failed = [name for name, result in results.items() if result == FAILED]
    body = {"ready": not failed, "failed": failed, "checks": results}
    return JsonResponse(body, status=503 if failed else 200)
