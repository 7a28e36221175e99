"""One visibility rule (leaderboard.selectors.visibility) for the run page and the API: a private
run and a run on a draft are seen by their submitter and active staff only; an inactive staff
account is an ordinary visitor."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.test import Client
from rest_framework.test import APIClient

from leaderboard.models import Run
from leaderboard.selectors.visibility import releases_visible, run_is_visible, runs_visible_to, viewer_is_staff

pytestmark = pytest.mark.django_db

VIEWERS = ["owner", "other", "anonymous", "staff", "inactive_staff"]
# Which runs of the world each viewer may see.
SEES = {
    "owner": {"public_run", "private_run", "draft_run"},
    "other": {"public_run"},
    "anonymous": {"public_run"},
    "staff": {"public_run", "private_run", "draft_run"},
    "inactive_staff": {"public_run"},
}


def _viewer(world: Any, name: str) -> Any:
    if name == "anonymous":
        return AnonymousUser()
    if name == "inactive_staff":
        return get_user_model().objects.create_user(
            "retired", password="pw-retired-1234", is_staff=True, is_active=False
        )
    return getattr(world, name)


@pytest.mark.parametrize("viewer", VIEWERS)
def test_the_run_page_shows_each_run_only_to_whom_the_rule_allows(world: Any, viewer: str, settings: Any) -> None:
    # Let a deactivated account keep its session, so the page itself must refuse it staff rights.
    settings.AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.AllowAllUsersModelBackend"]
    user = _viewer(world, viewer)
    client = Client()
    if user.is_authenticated:
        client.force_login(user)
    seen = {name for name in SEES["owner"] if client.get(f"/runs/{getattr(world, name).pk}/").status_code == 200}
    assert seen == SEES[viewer]


@pytest.mark.parametrize("viewer", VIEWERS)
def test_the_api_shows_each_run_only_to_whom_the_rule_allows(world: Any, viewer: str) -> None:
    user = _viewer(world, viewer)
    client = APIClient()
    if user.is_authenticated:
        client.force_authenticate(user=user)
    seen = {name for name in SEES["owner"] if client.get(f"/api/v1/runs/{getattr(world, name).pk}/").status_code == 200}
    assert seen == SEES[viewer]


@pytest.mark.parametrize("viewer", VIEWERS)
def test_the_selectors_agree_with_each_other_for_every_viewer(world: Any, viewer: str) -> None:
    user = _viewer(world, viewer)
    runs = Run.objects.filter(pk__in=[world.public_run.pk, world.private_run.pk, world.draft_run.pk])
    listed = set(runs_visible_to(runs, user=user).values_list("pk", flat=True))
    one_by_one = {run.pk for run in runs.select_related("release", "submission") if run_is_visible(run, user=user)}
    expected = {getattr(world, name).pk for name in SEES[viewer]}
    assert listed == one_by_one == expected


def test_an_inactive_staff_account_sees_no_draft_release(world: Any) -> None:
    retired = _viewer(world, "inactive_staff")
    assert not viewer_is_staff(retired)
    assert set(releases_visible(staff=viewer_is_staff(retired))) == {world.release}
    assert set(releases_visible(staff=viewer_is_staff(world.staff))) == {world.release, world.draft}
