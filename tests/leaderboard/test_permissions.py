"""leaderboard.permissions.staff_may: the one rule for a staff write."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser

from leaderboard.permissions import CHANGE_RUN, STAFF_WRITE_PERMISSIONS, staff_may
from tests.staff import staff_grant

pytestmark = pytest.mark.django_db


def _user(username: str, **extra: Any) -> Any:
    return get_user_model().objects.create_user(username, password="pw-a-long-one-123", **extra)


def test_staff_without_the_permission_may_not_write() -> None:
    assert staff_may(_user("helper", is_staff=True), CHANGE_RUN) is False


def test_staff_with_the_permission_may_write() -> None:
    assert staff_may(staff_grant(_user("maintainer", is_staff=True), CHANGE_RUN), CHANGE_RUN) is True


def test_a_permission_allows_only_its_own_writes() -> None:
    user = staff_grant(_user("maintainer", is_staff=True), CHANGE_RUN)
    assert [perm for perm in STAFF_WRITE_PERMISSIONS if staff_may(user, perm)] == [CHANGE_RUN]


def test_a_superuser_may_make_every_staff_write() -> None:
    root = get_user_model().objects.create_superuser("root", email="", password="pw-root-123456")
    assert all(staff_may(root, perm) for perm in STAFF_WRITE_PERMISSIONS)


def test_a_deactivated_staff_account_with_the_permission_may_not_write() -> None:
    user = staff_grant(_user("retired", is_staff=True), CHANGE_RUN)
    user.is_active = False
    user.save()
    assert staff_may(user, CHANGE_RUN) is False


def test_an_account_that_is_not_staff_may_not_write_even_with_the_permission() -> None:
    assert staff_may(staff_grant(_user("member"), CHANGE_RUN), CHANGE_RUN) is False


def test_anonymous_and_no_user_may_not_write() -> None:
    assert staff_may(AnonymousUser(), CHANGE_RUN) is False
    assert staff_may(None, CHANGE_RUN) is False


def test_a_services_staff_write_records_a_permitted_staff_account_or_none_for_a_script() -> None:
    from leaderboard.permissions import staff_write_actor

    maintainer = staff_grant(_user("maintainer", is_staff=True), CHANGE_RUN)
    assert staff_write_actor(maintainer, CHANGE_RUN, doing="re-run runs") == maintainer
    assert staff_write_actor(None, CHANGE_RUN, doing="re-run runs") is None


@pytest.mark.parametrize("who", ["staff without it", "ordinary account", "anonymous"])
def test_a_services_staff_write_refuses_anyone_without_the_permission_by_name(who: str) -> None:
    from django.core.exceptions import PermissionDenied

    from leaderboard.permissions import staff_write_actor

    user = {
        "staff without it": lambda: _user("helper", is_staff=True),
        "ordinary account": lambda: _user("someone"),
        "anonymous": AnonymousUser,
    }[who]()
    with pytest.raises(PermissionDenied) as refused:
        staff_write_actor(user, CHANGE_RUN, doing="re-run runs")
    assert str(refused.value) == "only staff members with the permission 'leaderboard.change_run' may re-run runs"
