"""Conditional GET for API reads, so a poller does not re-download unchanged data.

Leaderboards compute their ETag from Release.generation before touching the
standings (see views.LeaderboardView); every other GET gets an ETag hashed
from its rendered body, and ``If-None-Match`` answers 304 with no body.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers
from django.utils.http import parse_etags
from rest_framework.request import Request
from rest_framework.response import Response


def etag_matches(request: HttpRequest | Request, etag: str) -> bool:
    header = request.META.get("HTTP_IF_NONE_MATCH", "")
    if not header:
        return False
    candidates = parse_etags(header)
    bare = etag.removeprefix("W/")
    return "*" in candidates or any(c.removeprefix("W/") == bare for c in candidates)


def not_modified(etag: str) -> Response:
    """A 304 returned from a view (it is rendered by the usual finalize_response)."""
    return Response(status=304, headers={"ETag": etag})


def content_etag(request: HttpRequest, response: HttpResponse) -> None:
    """Give a successful GET's rendered body its ETag (a hash of the body, varying with who asks)
    and make it a 304 with no body when ``If-None-Match`` already holds it. Leaves alone an
    answer that has an ETag (the leaderboards'), a streamed one and any other status."""
    if request.method not in ("GET", "HEAD") or response.status_code != 200 or response.has_header("ETag"):
        return
    if response.streaming:
        return
    # Per-user bodies differ, so the validator must vary with who asks.
    patch_vary_headers(response, ["Authorization", "Cookie"])
    etag = '"' + hashlib.sha256(response.content).hexdigest()[:32] + '"'
    response["ETag"] = etag
    if etag_matches(request, etag):
        response.status_code = 304
        response.content = b""


class ApiConditionalGetMiddleware:
    """Every successful GET under /api/ has an ETag (docs/api.md, "Conditional requests"): the
    one place it is added. A mixin on some views left the others (the site key, the scheme
    boards, a card, the limits...) without one, so a poller re-downloaded them every time."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.path.startswith("/api/"):
            content_etag(request, response)
        return response
