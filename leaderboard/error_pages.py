"""Site-wide 404 and 500 answers.

Under /api/ a client always gets the API's JSON error shape; elsewhere a plain
page in the site's layout. Neither ever carries a traceback or a settings value.
The 500 page renders without a request context on purpose: whatever broke may
be the database or a context processor.
"""

from __future__ import annotations

import sys

from django.http import HttpRequest, HttpResponse, HttpResponseNotFound, HttpResponseServerError, JsonResponse
from django.template import loader

from leaderboard.api.errors import error_body
from leaderboard.unavailable import is_service_unavailable, unavailable_response


def _wants_json(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _wants_json(request):
        return JsonResponse(error_body("not_found", f"Nothing at {request.path}."), status=404)
    return HttpResponseNotFound(loader.render_to_string("404.html", {"path": request.path}, request))


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
