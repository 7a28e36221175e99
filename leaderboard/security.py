"""Headers every response carries.

Content-Security-Policy: no inline script or style anywhere on the site, so the policy never
needs 'unsafe-inline'; every asset is served from our own origin (no CDN).

Cache-Control for a credentialed request: see :class:`CredentialedNoStoreMiddleware`.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.cache import add_never_cache_headers

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        return response


class CredentialedNoStoreMiddleware:
    """A response to a request carrying credentials (a session cookie or an Authorization header)
    is stored by no cache, unless its view chose a Cache-Control itself.

    Such a response may hold what only its viewer sees: a private run's page, results and
    episodes, the account's submissions and diffs, the API's answers to a key. Without a
    Cache-Control a browser keeps them (history, the back button after signing out) and a
    misconfigured shared cache may serve them to the next visitor. Deciding by the credential,
    not by the page, covers every such page, present and future, in one place, and costs no
    query (the session is not loaded to ask). Anonymous requests keep their caching."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        credentialed = settings.SESSION_COOKIE_NAME in request.COOKIES or "HTTP_AUTHORIZATION" in request.META
        if credentialed and not response.has_header("Cache-Control"):
            add_never_cache_headers(response)  # no-cache, no-store, must-revalidate, private
        return response
