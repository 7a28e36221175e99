"""``/favicon.ico``: browsers ask for it where a page names no icon (Django's admin pages)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.templatetags.static import static
from django.views.decorators.http import require_safe


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """The site's own icon, rather than a full 404 page per admin visit. Not permanent: the
    static name carries a content hash that changes with the file."""
    return redirect(static("favicon.svg"))
