"""Conditional GET for API reads, so a poller does not re-download unchanged data.

Leaderboards compute their ETag from Release.generation before touching the
standings (see views.LeaderboardView); every other GET gets an ETag hashed
from its rendered body, and ``If-None-Match`` answers 304 with no body.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.utils.cache import patch_vary_headers
from django.utils.http import parse_etags
from rest_framework.request import Request
from rest_framework.response import Response


def etag_matches(request: Request, etag: str) -> bool:
    header = request.META.get("HTTP_IF_NONE_MATCH", "")
    if not header:
        return False
    candidates = parse_etags(header)
    bare = etag.removeprefix("W/")
    return "*" in candidates or any(c.removeprefix("W/") == bare for c in candidates)


def not_modified(etag: str) -> Response:
    """A 304 returned from a view (it is rendered by the usual finalize_response)."""
    return Response(status=304, headers={"ETag": etag})


class ConditionalGetMixin:
    """Adds a content ETag to successful GET responses and answers 304 on a match."""

    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        # A mixin: the APIView it is mixed into supplies finalize_response.
        response = super().finalize_response(request, response, *args, **kwargs)  # type: ignore[misc]
        if request.method not in ("GET", "HEAD") or response.status_code != 200 or response.has_header("ETag"):
            return response
        response.render()
        # Per-user bodies differ, so the validator must vary with who asks.
        patch_vary_headers(response, ["Authorization", "Cookie"])
        etag = '"' + hashlib.sha256(response.content).hexdigest()[:32] + '"'
        response["ETag"] = etag
        if etag_matches(request, etag):
            response.status_code = 304
            response.content = b""
        return response
