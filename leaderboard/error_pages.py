"""Site-wide 400, 403, 404, 405 and 500 answers.

Under /api/ a client always gets the API's JSON error shape; elsewhere a plain
page in the site's layout. Neither ever carries a traceback or a settings value.
The 500 page renders without a request context on purpose: whatever broke may
be the database or a context processor.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost, RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseForbidden,
    HttpResponseNotFound,
    HttpResponseServerError,
    JsonResponse,
)
from django.http.multipartparser import MultiPartParserError
from django.template import loader

from leaderboard.api.errors import error_body
from leaderboard.unavailable import is_service_unavailable, unavailable_response
from leaderboard.unavailable import wants_json as _wants_json


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse(error_body("not_found", f"Nothing at {request.path}."), status=404)
    return HttpResponseNotFound(loader.render_to_string("404.html", {"path": request.path}, request))


class JsonNotFoundMiddleware:
    """A view's 404 under /api/ or on a .json download is the JSON error whatever DEBUG says:
    with DEBUG on (``make run``) Django answered its HTML debug page, listing every route, to a
    harness developing against the embedded site; off, ``page_not_found`` already does this."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, Http404) and _wants_json(request):
            return page_not_found(request, exception)
        return None


# Said when a refusal carries no sentence of its own (the admin's, say).
FORBIDDEN_MESSAGE = "This account may not do this here."


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """A refusal with the sentence the view raised it with (PermissionDenied("Only the account that
    owns this agent ...")): Django's default page was a bare "403 Forbidden" that dropped it."""
    message = str(exception or "").strip()[:300] or FORBIDDEN_MESSAGE
    if _wants_json(request):
        return JsonResponse(error_body("permission_denied", message), status=403)
    return HttpResponseForbidden(loader.render_to_string("403.html", {"message": message}, request))


# Said for a form the CSRF check refused (Django's own page, unstyled, spoke of its middleware).
CSRF_MESSAGE = (
    "The form could not be accepted: its security token was missing or out of date (the page may have "
    "been open a long time, or this browser blocks cookies for the site). Reload the page and send the form again."
)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: the refusal in the site's layout (JSON under /api/), saying what to do."""
    if _wants_json(request):
        return JsonResponse(error_body("csrf_failed", CSRF_MESSAGE), status=403)
    return HttpResponseForbidden(loader.render_to_string("403.html", {"message": CSRF_MESSAGE}, request))


def bad_request_message(exception: Exception | None) -> str:
    """What was wrong with a request Django could not read (Django's own words name settings
    or echo the Host, so they are not shown): a form body that is not valid multipart, has too many fields or files,
    or is too large; a Host this site does not serve; else a generic sentence."""
    if isinstance(exception, TooManyFieldsSent):
        # Query parameters count too: a GET with too many of them is refused the same way.
        return (
            f"the request sent more than {settings.DATA_UPLOAD_MAX_NUMBER_FIELDS} fields (query parameters "
            "or form fields); send only those the page or endpoint takes."
        )
    if isinstance(exception, TooManyFilesSent):
        return f"the form sent more than {settings.DATA_UPLOAD_MAX_NUMBER_FILES} files; send one bundle at a time."
    if isinstance(exception, RequestDataTooBig):
        return (
            f"the request's form fields or JSON body hold more than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes; "
            "a bundle goes in the upload's file field, every other field is short."
        )
    if isinstance(exception, MultiPartParserError):
        return (
            "the body is not valid multipart/form-data (a missing or malformed boundary or "
            "Content-Type); send the form as a browser does."
        )
    if isinstance(exception, DisallowedHost):
        return "the request's Host header names a host this site does not serve."
    return "the request is malformed and could not be read."


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Django's 400 for a request it could not read: a bare "Bad Request (400)" page before,
    saying nothing about what was wrong (tests/site/test_error_pages.py)."""
    message = bad_request_message(exception)
    if _wants_json(request):
        return JsonResponse(error_body("malformed_request", message), status=400)
    if isinstance(exception, DisallowedHost):
        # The layout builds links from the request's host: rendered without the request.
        return HttpResponseBadRequest(loader.render_to_string("400.html", {"message": message}))
    return HttpResponseBadRequest(loader.render_to_string("400.html", {"message": message}, request))


def method_not_allowed_message(method: str, allow: str) -> str:
    return f"{method[:20]} is not a method this address answers; it answers {allow or 'none'}."


class MethodNotAllowedMiddleware:
    """Django's 405 (require_safe, require_POST, a class-based view without the handler) has an
    empty body: a client was told neither what was wrong nor what to send instead. The bodiless
    405 gets the site's answer: JSON under /api/ (DRF's own 405s already carry one), else a page;
    the Allow header is kept."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or response.streaming or response.content:
            return response
        message = method_not_allowed_message(request.method or "", response.get("Allow", ""))
        if _wants_json(request):
            answer: HttpResponse = JsonResponse(error_body("method_not_allowed", message), status=405)
        else:
            answer = HttpResponse(loader.render_to_string("405.html", {"message": message}, request), status=405)
        answer["Allow"] = response.get("Allow", "")
        return answer


class QueryLimitsMiddleware:
    """Parses the query string first and answers the 400 itself when Django refuses it (more than
    DATA_UPLOAD_MAX_NUMBER_FIELDS parameters). Left to the middleware that reads it later, the
    refusal went through Django's exception response, which under DEBUG (make run's default)
    reads the query string again to build its page, failed the same way, and ended as a bare
    plain-text 500."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            request.GET  # noqa: B018 - parsed here on purpose (cached on the request after)
        except TooManyFieldsSent as exc:
            return bad_request(request, exc)
        return self.get_response(request)


def server_error(request: HttpRequest) -> HttpResponse:
    # Called inside Django's except block: an unreachable database raised outside a view
    # (a middleware, the session save) still gets the 503, not "something went wrong".
    exc = sys.exc_info()[1]
    if exc is not None and is_service_unavailable(exc):
        return unavailable_response(request, exc)
    if _wants_json(request):
        return JsonResponse(
            error_body("server_error", "The server failed to handle this request; it has been logged."), status=500
        )
    return HttpResponseServerError(loader.render_to_string("500.html"))
