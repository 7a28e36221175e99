"""One rule for the text a request carries outside a JSON body: no NUL character (U+0000).

PostgreSQL refuses NUL in every text column, so a NUL that reaches a query or a write is a
DataError, a 500 (SQLite stores it, and a name with a hidden NUL in it). Through a URL it
reached the database from every route with a text segment: ``/benchmarks/x/v0.5%00/``, the
boards, exports, badges, ``/api/v1/agents/%00/``. Refused here, before any view, with
``400 invalid_text`` naming where it was: the path or a query parameter (before the view is
resolved), or a form field of a view whose POST body Django's CSRF check reads anyway (after
that check). A CSRF-exempt view reads its own body: the upload page checks the declared size
first, and the API's views are DRF's, whose multipart fields ``StrictMultiPartParser`` below
checks once parsed (after the view's upload size limit) and whose JSON bodies the API parser
does (``submissions.api.parsers``). Bundles are the bundle parser's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.http.request import QueryDict
from django.template.loader import render_to_string
from rest_framework.exceptions import APIException
from rest_framework.parsers import DataAndFiles, MultiPartParser

from leaderboard.api.errors import error_body

NUL = "\x00"


def _nul_in(fields: QueryDict, kind: str) -> str | None:
    for name, values in fields.lists():
        if NUL in name:
            return f"a {kind} name"
        if any(NUL in value for value in values):
            return f"{kind} {name[:40]!r}"
    return None


def nul_location(request: HttpRequest) -> str | None:
    """Where the URL of ``request`` carries a NUL ("the path", "query parameter 'q'"), else None."""
    if NUL in request.path_info:
        return "the path"
    return _nul_in(request.GET, "query parameter")


def is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


class NulCharacterMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        where = nul_location(request)
        return self.get_response(request) if where is None else refusal(request, where)

    def process_view(
        self, request: HttpRequest, view_func: Callable[..., Any], view_args: Any, view_kwargs: Any
    ) -> HttpResponse | None:
        if request.method != "POST" or getattr(view_func, "csrf_exempt", False):
            return None
        where = _nul_in(request.POST, "form field")
        return None if where is None else refusal(request, where)


def nul_message(where: str) -> str:
    return f"{where}: contains a NUL character (U+0000), which no text can hold; leave it out."


def refusal(request: HttpRequest, where: str) -> HttpResponse:
    message = nul_message(where)
    if is_api(request):
        return JsonResponse(error_body("invalid_text", message), status=400)
    return HttpResponseBadRequest(
        render_to_string("leaderboard/invalid_text.html", {"message": message}, request=request)
    )


class InvalidText(APIException):
    """``400 invalid_text``: text no column can store. A DRF exception, not ``ApiError``: the
    parsers raising it are loaded by DRF's settings while ``leaderboard.api_errors`` (which
    imports DRF's views) may still be importing."""

    status_code = 400
    default_code = "invalid_text"


class StrictMultiPartParser(MultiPartParser):
    """DRF's multipart parser, refusing a NUL in a field's name or value (``400 invalid_text``)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> DataAndFiles[Any, Any]:
        parsed = super().parse(stream, media_type, parser_context)
        where = _nul_in(parsed.data, "form field")
        if where is not None:
            raise InvalidText(nul_message(where))
        return parsed
