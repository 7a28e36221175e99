"""A dependency down: a clear 503, never a traceback.

When PostgreSQL cannot be reached (or the bundle storage during an upload, or the
broker for an explicit enqueue), a request is answered ``503 Service Unavailable``
with ``Retry-After``: under /api/ the API's JSON error (``database_unavailable``,
``storage_unavailable``, ``broker_unavailable``), elsewhere a plain page rendered
without a request context (context processors would query the very database that
is down). The error's own text is logged, never shown: it names hosts and ports.

Three places use this one rule: the middleware below (an error raised by a
view), the API's exception handler (a DRF view catches exceptions before any
middleware sees them), and the site's handler500 (an error raised by another
middleware, e.g. the session's).

Redis down is mostly not here: the cache degrades to misses (leaderboard.cache)
and an upload whose enqueue fails stays queued in the database for the sweeper.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import InterfaceError, InternalError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader
from kombu.exceptions import OperationalError as BrokerError

from leaderboard.api.errors import error_body

logger = logging.getLogger("podium.unavailable")

# What a client is told to wait before trying again: long enough for a database
# restart or failover, short enough that a script does not give up.
RETRY_AFTER_SECONDS = 30
# psycopg's connection failures (and a connection lost mid-request) surface as these.
DATABASE_ERRORS: tuple[type[Exception], ...] = (OperationalError, InterfaceError)


class ServiceUnavailable(Exception):
    """A dependency the request needs is down; answered 503 with ``code``."""

    code = "service_unavailable"
    public_message = "A service the site depends on is unavailable; nothing was changed."


class StorageUnavailable(ServiceUnavailable):
    code = "storage_unavailable"
    public_message = "The site's file storage is unavailable; the upload was not stored."


# SQLSTATE of a write refused by a read-only database: a standby after a failover, or
# default_transaction_read_only. psycopg raises it as an InternalError, not an OperationalError.
READ_ONLY_SQLSTATE = "25006"


def database_read_only(exc: BaseException) -> bool:
    return isinstance(exc, InternalError) and getattr(exc.__cause__, "sqlstate", None) == READ_ONLY_SQLSTATE


def unavailable_code(exc: BaseException | None) -> tuple[str, str] | None:
    """(code, message) when ``exc`` means a dependency is down, else None."""
    if isinstance(exc, ServiceUnavailable):
        return exc.code, exc.public_message
    if isinstance(exc, DATABASE_ERRORS):
        return "database_unavailable", "The site's database is unavailable; nothing was changed."
    if exc is not None and database_read_only(exc):
        return (
            "database_unavailable",
            "The site's database takes no changes right now (read-only); nothing was changed.",
        )
    if isinstance(exc, BrokerError):
        # Publishing to a Redis broker that is down (e.g. the admin's "re-verify" action).
        # Uploads never get here: their enqueue failure is caught and the sweeper enqueues later.
        return "broker_unavailable", "The site's task queue is unavailable; nothing was queued."
    return None


def is_service_unavailable(exc: BaseException | None) -> bool:
    return unavailable_code(exc) is not None


def unavailable_body(exc: BaseException) -> dict[str, Any]:
    code, message = unavailable_code(exc) or ("service_unavailable", ServiceUnavailable.public_message)
    return error_body(code, f"{message} Try again in {RETRY_AFTER_SECONDS} seconds.")


def unavailable_headers() -> dict[str, str]:
    # A 503 must not be cached by the proxy in place of the page.
    return {"Retry-After": str(RETRY_AFTER_SECONDS), "Cache-Control": "no-store"}


def log_unavailable(request: Any, exc: BaseException) -> None:
    """One line naming the code and the request; the error's text only here, never in the answer."""
    code = (unavailable_code(exc) or ("service_unavailable", ""))[0]
    method, path = getattr(request, "method", "?"), getattr(request, "path", "?")
    logger.error("%s on %s %s: %s: %s", code, method, path, type(exc).__name__, exc)


def wants_json(request: HttpRequest) -> bool:
    """Whether an error is answered as JSON: the API, and every ``.json`` or ``.csv`` download (a
    board's, a chart's, a run's results), whose readers are scripts: they get the API's error
    shape (docs/api.md), not the site's HTML page."""
    return request.path.startswith("/api/") or request.path.endswith((".json", ".csv"))


def unavailable_response(request: HttpRequest, exc: BaseException) -> HttpResponse:
    """The 503 answer: JSON for the API and .json downloads, a plain page elsewhere, saying
    which service is away (the database, the file storage, the task queue)."""
    log_unavailable(request, exc)
    if wants_json(request):
        response: HttpResponse = JsonResponse(unavailable_body(exc), status=503)
    else:
        message = (unavailable_code(exc) or ("", ServiceUnavailable.public_message))[1]
        response = HttpResponse(loader.render_to_string("503.html", {"message": message}), status=503)
    for name, value in unavailable_headers().items():
        response[name] = value
    return response


class ServiceUnavailableMiddleware:
    """Turns a view's database (or storage) outage into the 503 answer."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_service_unavailable(exception):
            return None
        return unavailable_response(request, exception)
