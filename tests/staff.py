"""Staff accounts for the tests: staff status alone reads; each write needs its Django permission
(leaderboard.permissions)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from leaderboard.permissions import STAFF_WRITE_PERMISSIONS


def staff_grant(user: Any, *perms: str) -> Any:
    """Give ``user`` the permissions ``perms`` ("app_label.codename"), or every staff-write
    permission when none are named; returns the user re-read (a fresh permission cache)."""
    for perm in perms or STAFF_WRITE_PERMISSIONS:
        app_label, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return get_user_model().objects.get(pk=user.pk)


def staff_with(username: str, *perms: str) -> Any:
    """A new active staff account holding exactly ``perms`` (none: staff status alone, which reads)."""
    user = get_user_model().objects.create_user(username=username, password="a-long-test-password-1", is_staff=True)
    return staff_grant(user, *perms) if perms else user
