"""The browser session's authentication for the API: DRF's, its CSRF refusal answered as the
site's ``csrf_failed`` (docs/api.md, "Errors") rather than DRF's generic permission_denied.

A module of its own, importing nothing of the site at load: DRF imports the authentication
classes named in its settings while ``rest_framework.views`` loads, which the API modules import.
"""

from __future__ import annotations

from rest_framework import authentication, exceptions
from rest_framework.request import Request


class CsrfFailed(exceptions.PermissionDenied):
    """A signed-in browser session's write without its CSRF token (``csrf_failed``)."""

    default_code = "csrf_failed"


class SessionAuthentication(authentication.SessionAuthentication):
    """DRF's session authentication, its CSRF refusal answered as :class:`CsrfFailed` with the
    site's own sentence (DRF said "CSRF Failed: CSRF token missing." as permission_denied)."""

    def enforce_csrf(self, request: Request) -> None:
        from leaderboard.error_pages import CSRF_MESSAGE  # late: see the module's docstring

        try:
            super().enforce_csrf(request)
        except exceptions.PermissionDenied:
            raise CsrfFailed(CSRF_MESSAGE) from None
