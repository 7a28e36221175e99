"""DRF side of the staff-write rule (leaderboard.permissions.staff_may): a staff API view
declares the permission each write needs."""

from __future__ import annotations

from collections.abc import Mapping

from rest_framework import permissions
from rest_framework.request import Request
from rest_framework.views import APIView

from leaderboard.permissions import staff_may


class StaffPermission(permissions.BasePermission):
    """DRF: staff for every method, and the view's ``required_permission`` for the methods it names.

    ``required_permission`` is a permission string (every method but the safe ones) or a
    {method: permission} mapping; a method it does not name needs staff only (a read).
    A refusal is DRF's PermissionDenied: the API's 403 ``permission_denied`` body.
    """

    message = "Staff only."

    def has_permission(self, request: Request, view: APIView) -> bool:
        user = request.user
        if not (getattr(user, "is_authenticated", False) and getattr(user, "is_active", False)):
            return False
        if not (getattr(user, "is_staff", False) or getattr(user, "is_superuser", False)):
            return False
        perm = required_permission(view, request.method or "")
        if perm is None or staff_may(user, perm):
            return True
        # DRF builds a new instance per request: the message names what is missing for this one.
        self.message = f"This staff account lacks the permission {perm!r}; an administrator grants it in the admin."
        return False


def required_permission(view: APIView, method: str) -> str | None:
    """The permission ``view`` declares for ``method`` (None: staff alone suffices)."""
    declared = getattr(view, "required_permission", None)
    if isinstance(declared, Mapping):
        return declared.get(method.upper())
    if declared is None or method.upper() in permissions.SAFE_METHODS:
        return None
    return str(declared)
