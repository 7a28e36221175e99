"""Who may *write* as staff: the one rule for every staff-only write (API, admin, pages, services).

``is_staff`` opens the admin and the reading powers (drafts, embargoed and withheld values:
``leaderboard.selectors.visibility.viewer_is_staff``). It does not, by itself, let an account
change anything: a staff write also needs the Django model permission an operator gave the
account in the admin (a "view only" helper account is refused every write), as the Django
admin's own add/change/delete pages already do. A superuser has every permission.

API views declare the permission they need (``required_permission``, a string or a
{method: permission} mapping) and list ``leaderboard.api.permissions.StaffPermission``; admin actions declare
``permissions=[...]``; services call ``staff_may``. docs/security-model.md "Actors";
tests/leaderboard/test_permissions.py.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied

# The permission each staff write needs (Django's "<app_label>.<action>_<model>").
PUBLISH_RELEASE = "leaderboard.change_release"  # sync a manifest, sign off a gate, publish
ADD_RACE = "leaderboard.add_race"  # schedule a race (its hidden task set)
CHANGE_RACE = "leaderboard.change_race"  # start, close, release a race
CHANGE_RUN = "leaderboard.change_run"  # official re-run, level change, hide / unhide
ADD_SIGNING_KEY = "leaderboard.add_signingkey"
CHANGE_SIGNING_KEY = "leaderboard.change_signingkey"  # revoke
ADD_BASELINE = "leaderboard.add_baseline"
DELETE_BASELINE = "leaderboard.delete_baseline"
CHANGE_SUBMISSION = "submissions.change_submission"  # re-verify
ADD_RESCORE = "submissions.add_rescore"  # propose a rescore or a carry
CHANGE_RESCORE = "submissions.change_rescore"  # apply a proposed rescore
CHANGE_NOTIFICATION = "submissions.change_notificationdelivery"  # send a failed one again


def staff_may(user: Any, perm: str) -> bool:
    """Whether ``user`` (possibly anonymous or None) may make a staff write that needs ``perm``:
    an active account that is staff and holds ``perm``, or an active superuser."""
    if user is None or not getattr(user, "is_authenticated", False) or not getattr(user, "is_active", False):
        return False
    if getattr(user, "is_superuser", False):
        return True
    return bool(getattr(user, "is_staff", False) and user.has_perm(perm))


def staff_write_actor(user: Any, perm: str, *, doing: str) -> Any:
    """The actor a service records for a staff write that needs ``perm``: None for a script (a
    management command, the demo loader), else ``user`` when :func:`staff_may` allows it; any
    other account raises PermissionDenied ("only staff members with the permission ... may
    <doing>"). Services call it whatever their caller checked, so no entry point skips the rule."""
    if user is None:
        return None
    if not staff_may(user, perm):
        raise PermissionDenied(f"only staff members with the permission {perm!r} may {doing}")
    return user


# Every permission a staff write above asks for: an operator who wants a full maintainer gives
# these (or makes the account a superuser); the tests' staff fixtures are given them too.
STAFF_WRITE_PERMISSIONS = (
    PUBLISH_RELEASE,
    ADD_RACE,
    CHANGE_RACE,
    CHANGE_RUN,
    ADD_SIGNING_KEY,
    CHANGE_SIGNING_KEY,
    ADD_BASELINE,
    DELETE_BASELINE,
    CHANGE_SUBMISSION,
    ADD_RESCORE,
    CHANGE_RESCORE,
    CHANGE_NOTIFICATION,
)
