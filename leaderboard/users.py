"""The account types that views, services and selectors share.

The site uses Django's own ``auth.User``. A visitor may be anonymous, so code that filters
what a *viewer* may see takes a ``Viewer``; code that acts *for* an account takes a ``User``,
obtained from the request with ``signed_in_user`` once an authentication gate has passed.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from rest_framework.request import Request

Viewer = User | AnonymousUser


def signed_in_user(request: HttpRequest | Request) -> User:
    """The request's account, behind ``login_required`` or DRF's ``IsAuthenticated``.

    Those gates already turn anonymous visitors away; the check here makes that invariant
    explicit (an anonymous request reaching an account-only path is refused, never served
    as someone else).
    """
    user = request.user
    if not isinstance(user, User):
        raise PermissionDenied("this page needs a signed-in account")
    return user
