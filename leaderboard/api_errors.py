"""One error shape for the whole API: ``{"error": {"code": ..., "message": ...}}``.

``code`` is stable (clients branch on it); ``message`` is for people. A
validation error adds ``fields`` ({field: [messages]}). Anything unexpected is
logged here with its traceback and answered as a bare 500 ``server_error``:
no stack trace, exception text or setting ever reaches a client.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Sequence
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404, HttpRequest, JsonResponse
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView, set_rollback

from leaderboard import unavailable
from leaderboard.api.errors import error_body
from leaderboard.api.session_auth import CsrfFailed
from leaderboard.error_pages import bad_request_message

logger = logging.getLogger("podium.api")


class ApiError(exceptions.APIException):
    """An API error with an explicit stable code, status and message."""

    def __init__(
        self,
        *,
        code: str,
        message: str,
        status_code: int = 400,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ):
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.error_code = code
        self.message = message
        self.headers = headers or {}
        self.extra = extra or {}


# DRF exception class -> stable code, for the ones whose default code is vague.
_CODES: dict[type[exceptions.APIException], str] = {
    exceptions.ValidationError: "invalid",
    exceptions.ParseError: "malformed_request",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "throttled",
    CsrfFailed: "csrf_failed",
}


def _flatten(detail: Any) -> Any:
    if isinstance(detail, dict):
        return {str(k): _flatten(v) for k, v in detail.items()}
    if isinstance(detail, list):
        return [_flatten(v) for v in detail]
    return str(detail)


def _first_message(fields: Any, path: str = "") -> str:
    if isinstance(fields, dict):
        for key, value in fields.items():
            name = key if key != "non_field_errors" else ""
            return _first_message(value, f"{path}.{name}" if path and name else path or name)
    if isinstance(fields, list) and fields:
        return _first_message(fields[0], path)
    return f"{path}: {fields}" if path else str(fields)


def _error_code(exc: exceptions.APIException) -> str:
    """The stable code of a DRF exception: its own class's first, then a base class's
    (a subclass of Throttled, such as a quota, keeps its own default_code)."""
    code = next((c for cls, c in _CODES.items() if type(exc) is cls), None)
    if code is None:
        code = next((c for cls, c in _CODES.items() if isinstance(exc, cls)), None)
    if code is None or (isinstance(exc, exceptions.Throttled) and type(exc) is not exceptions.Throttled):
        code = str(exc.default_code)
    return code


def _framework_error(exc: exceptions.APIException) -> Response:
    """DRF's own exceptions (authentication, permission, validation, throttling) in the error shape."""
    headers: dict[str, str] = {}
    # Set only on the exception classes that answer with these headers (NotAuthenticated, Throttled).
    if getattr(exc, "auth_header", None):
        headers["WWW-Authenticate"] = exc.auth_header  # type: ignore[attr-defined]
    if getattr(exc, "wait", None):
        headers["Retry-After"] = str(int(exc.wait))  # type: ignore[attr-defined]
    code = _error_code(exc)
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        if not isinstance(fields, dict):
            fields = {"non_field_errors": fields}
        body = error_body(code, _first_message(fields) or "Invalid input.", fields=fields)
    else:
        body = error_body(code, str(exc.detail))
    return Response(body, status=exc.status_code, headers=headers)


def refuse_unknown_fields(
    data: Any, allowed: Sequence[str], *, where: str = "", repeatable: Collection[str] = ()
) -> None:
    """Refuse an API body's field that is not one of ``allowed`` (``invalid``, naming it): read
    past, a misspelt field ("is_private") was silently ignored and its intent lost (a run meant
    to stay private published). Call it before the body's own validation, which refuses a body
    that is not an object (this passes one). ``where``: the path of a nested object ("agent.")."""
    if not hasattr(data, "keys"):
        return
    unknown = sorted(where + str(key)[:40] for key in data if key not in allowed)
    if unknown:
        expected = f"expected {', '.join(allowed)}" if allowed else "this request reads no body"
        raise ApiError(
            code="invalid",
            message=f"{unknown[0]}: unknown field; {expected}.",
            extra={"fields": {unknown[0]: ["Unknown field."]}},
        )
    # A form (multipart or urlencoded) may name a field twice, which is read as the last:
    # "-F release=0.4 -F release=0.5" asked for 0.5 without a word (a JSON body's repeated key is
    # refused by its parser).
    if hasattr(data, "getlist"):
        for key in data:
            if key in repeatable:
                continue  # a list field, which a form sends as the name repeated
            given = len(data.getlist(key))
            if given > 1:
                raise ApiError(
                    code="invalid",
                    message=f"{where}{str(key)[:40]}: given {given} times; send it once.",
                    extra={"fields": {str(key)[:40]: ["Given more than once."]}},
                )


def refuse_body_fields(request: Request) -> None:
    """Refuse any body field of a request that reads none (withdraw, close, rotate...): sent
    with, say, ``{"reason": ...}`` or ``{"dry_run": true}``, the action was taken and the field
    read past, the one rule of :func:`refuse_unknown_fields` with nothing allowed."""
    refuse_unknown_fields(request.data, ())


# Query parameters every paginated list reads: pagination, and DRF's format override.
LIST_PARAMETERS = frozenset({"limit", "offset", "format"})


def refuse_unread_parameters(request: Request, reads: frozenset[str], *, what: str = "list") -> None:
    """Refuse a query parameter the endpoint does not read (``invalid_query``, naming it and what
    it reads): a typo such as ``?verdicts=rejected`` or ``?releases=6`` was ignored and answered
    everything, as if the filter had matched."""
    unknown = sorted(set(request.query_params) - reads)
    if unknown:
        raise ApiError(
            code="invalid_query",
            message=f"{unknown[0][:40]}: not a parameter of this {what}; "
            + (f"it reads {', '.join(sorted(reads))}." if reads else "it reads none."),
        )


def refuse_fields_not_read(data: Any, serializer_class: type[serializers.Serializer]) -> None:
    """:func:`refuse_unknown_fields` for a body ``serializer_class`` reads: its fields, and each
    nested serializer's fields inside that object. A serializer ignores any other key, so a
    staff "dry_run" lowered a run's level for good and a card opened with "private" was public."""
    fields = serializer_class().fields
    lists = {
        name
        for name, field in fields.items()
        if isinstance(field, (serializers.ListField, serializers.MultipleChoiceField, serializers.ManyRelatedField))
    }
    refuse_unknown_fields(data, tuple(fields), repeatable=lists)
    for name, field in fields.items():
        if isinstance(field, serializers.Serializer) and hasattr(data, "keys") and name in data:
            refuse_unknown_fields(data[name], tuple(field.fields), where=f"{name}.")


def request_limit_error(exc: Exception) -> ApiError | None:
    """Django's own refusal of a request it will not read (raised from ``request.data`` or
    ``request.GET``, past every view's checks), as the API's error; None for any other exception.
    It was a 500. The sentence is the error pages' (one wording for pages and API)."""
    if isinstance(exc, RequestDataTooBig):
        return ApiError(
            code="too_large", message=bad_request_message(exc), status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
        )
    if isinstance(exc, (TooManyFieldsSent, TooManyFilesSent)):
        return ApiError(code="malformed_request", message=bad_request_message(exc))
    return None


# An authentication scheme's name (RFC 9110 token, e.g. Bearer, Basic), short enough to echo.
_SCHEME_WORD = re.compile(r"[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]{0,19}")


def _other_scheme_named(exc: Exception, request: Any) -> Exception:
    """A request refused as unauthenticated that sent an Authorization header of another scheme
    ("Bearer <key>") is told the scheme this API reads: DRF's "credentials were not provided" left
    a client sure it had sent them. Same code and WWW-Authenticate; only the sentence differs."""
    if not isinstance(exc, exceptions.NotAuthenticated) or request is None:
        return exc
    header = str(request.META.get("HTTP_AUTHORIZATION", "")).strip()
    scheme = header.split(" ", 1)[0]
    if not scheme or scheme.lower() == "api-key":
        return exc
    reads = "Authorization: this API reads 'Api-Key <key>' (or a signed-in session)"
    if " " not in header or not _SCHEME_WORD.fullmatch(scheme):
        # A bare value is most likely the key itself: never echo any of it (its secret follows its prefix).
        message = f"{reads}; this header names no scheme: send 'Api-Key ' before the key."
    else:
        message = f"{reads}, not {scheme!r} credentials."
    named = exceptions.NotAuthenticated(message)
    named.auth_header = getattr(exc, "auth_header", None)  # type: ignore[attr-defined]
    return named


def _media_types_named(exc: Exception, view: Any) -> Exception:
    """A 415 that says what the endpoint reads: DRF's names only what was sent, so a client
    posting a form to a JSON endpoint was not told to send JSON."""
    if not isinstance(exc, exceptions.UnsupportedMediaType) or view is None:
        return exc
    # The parsers this request was read with: a view may choose them per method (the upload
    # reads multipart alone), and its class-wide list then named JSON while refusing it.
    parsers = view.get_parsers() if hasattr(view, "get_parsers") else getattr(view, "parser_classes", [])
    accepted = list(dict.fromkeys(parser.media_type for parser in parsers))
    if not accepted:
        return exc
    return exceptions.UnsupportedMediaType(
        str(exc.detail).split('"')[1] if '"' in str(exc.detail) else "",
        detail=f"{exc.detail} This endpoint reads {' or '.join(accepted)}.",
    )


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    exc = request_limit_error(exc) or exc
    if isinstance(exc, Http404):
        # Names what was asked for (DRF's "Not found." did not); one sentence whether the object
        # does not exist or is not visible to this client, so a private id is not confirmed.
        path = str(getattr(context.get("request"), "path", ""))[:200]
        exc = exceptions.NotFound(f"Nothing at {path}: no such object, or not one this client may see.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()

    exc = _other_scheme_named(exc, context.get("request"))
    exc = _media_types_named(exc, context.get("view"))
    set_rollback()
    if isinstance(exc, ApiError):
        body = error_body(exc.error_code, exc.message, **exc.extra)
        return Response(body, status=exc.status_code, headers=exc.headers)

    if isinstance(exc, exceptions.APIException):
        return _framework_error(exc)

    request = context.get("request")

    if unavailable.is_service_unavailable(exc):
        # PostgreSQL (or storage) down inside an API view: the same 503 as everywhere else.
        unavailable.log_unavailable(request, exc)
        return Response(
            unavailable.unavailable_body(exc),
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers=unavailable.unavailable_headers(),
        )
    logger.error(
        "Unhandled API error on %s", getattr(request, "path", "?"), exc_info=(type(exc), exc, exc.__traceback__)
    )
    return Response(
        error_body("server_error", "The server failed to handle this request; it has been logged."),
        status=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )


class JsonErrorsView(APIView):
    """Base for an API view whose own renderers are not JSON (the docs page's HTML and script,
    the schema's YAML). DRF renders an error with the view's renderer, so a POST to the docs
    page was a plain-text "405 Method Not Allowed" and the schema's 405/406 was YAML; here every
    error answer (405, 406, 404, ...) is the API's JSON error shape, as on every other endpoint,
    while a successful answer keeps the negotiated renderer."""

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        # handle_exception marks the answers it built from an exception; a 406 sets no renderer
        # at all (negotiation failed), which DRF would fill with the view's first one.
        if getattr(response, "exception", False):
            request.accepted_renderer = JSONRenderer()
            request.accepted_media_type = JSONRenderer.media_type
        return super().finalize_response(request, response, *args, **kwargs)


@csrf_exempt  # nothing to protect, and a CSRF failure here would answer HTML instead of JSON
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Catch-all for unknown paths under /api/: JSON, not the HTML 404 page. A path that is an
    endpoint with a trailing slash says so (every endpoint ends in one; a client that dropped it
    was told only that nothing was there)."""
    message = f"No API endpoint at {request.path}."
    if not request.path.endswith("/") and _resolves(request.path + "/"):
        message += f" Did you mean {request.path}/ (every endpoint ends with a slash)?"
    return JsonResponse(error_body("not_found", message), status=404)


def _resolves(path: str) -> bool:
    try:
        match = resolve(path)
    except Resolver404:
        return False
    return match.func is not api_not_found
