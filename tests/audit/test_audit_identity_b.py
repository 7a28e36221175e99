"""Outsider audit (B): ways one account could act as another or beyond its rights."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from leaderboard.models import Baseline, Release
from leaderboard.selectors.standing_ranks import standings_ranked
from leaderboard.services.paper_gap_standings import standings_refresh
from tests.staff import staff_grant
from tests.website.conftest import make_benchmark, make_release, make_run

pytestmark = pytest.mark.django_db

_counter = itertools.count(1)


@pytest.fixture(autouse=True)
def _local(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": f"audit-b-{next(_counter)}"}
    }


def _user(username: str, *perms: str, **extra: Any) -> Any:
    user = get_user_model().objects.create_user(username=username, password="a-long-test-password-1", **extra)
    return staff_grant(user, *perms) if perms else user


def test_the_baseline_change_form_cannot_mark_another_version_without_the_add_permission(client):
    """Staff holding only leaderboard.change_baseline must not be able to mark a new version as a
    baseline, which takes it off every ranked board: that is leaderboard.add_baseline's write
    (leaderboard.permissions). The admin's change form let them, by changing the version."""
    release = make_release(make_benchmark())
    paper = make_run(release, agent_name="Paper", score=0.95, with_standings=False)
    victim = make_run(release, agent_name="Victim", score=0.9, with_standings=False)
    baseline = Baseline.objects.create(agent_version=paper.agent_version, kind="paper", note="Table 2")
    standings_refresh(release=release)
    helper = _user("helper", "leaderboard.change_baseline", "leaderboard.view_baseline", is_staff=True)
    client.force_login(helper)
    response = client.post(
        reverse("admin:leaderboard_baseline_change", args=[baseline.pk]),
        {"agent_version": str(victim.agent_version.pk), "kind": "random", "note": "moved"},
    )
    assert response.status_code == 403
    assert list(Baseline.objects.values_list("agent_version_id", "kind", "note")) == [
        (paper.agent_version_id, "paper", "Table 2")
    ]
    assert dict(standings_ranked().filter(tab="overall").values_list("agent_name", "rank")) == {"Victim": 1}


def test_a_maintainer_editing_a_baseline_changes_its_note_not_its_version(client):
    """With every permission, the change form re-describes the baseline; the version is fixed
    (it used to save a second baseline for the posted version and keep the first)."""
    release = make_release(make_benchmark())
    paper = make_run(release, agent_name="Paper", score=0.95, with_standings=False)
    other = make_run(release, agent_name="Other", score=0.9, with_standings=False)
    standings_refresh(release=release)
    baseline = Baseline.objects.create(agent_version=paper.agent_version, kind="paper", note="Table 2")
    client.force_login(_user("maintainer", is_staff=True, is_superuser=True))
    response = client.post(
        reverse("admin:leaderboard_baseline_change", args=[baseline.pk]),
        {"agent_version": str(other.agent_version.pk), "kind": "paper", "note": "Table 3"},
    )
    assert response.status_code == 302, response.content[:500]
    assert list(Baseline.objects.values_list("agent_version_id", "kind", "note")) == [
        (paper.agent_version_id, "paper", "Table 3")
    ]


def test_the_baseline_services_refuse_staff_without_the_permission():
    from django.core.exceptions import PermissionDenied

    from leaderboard.services.declarations import baseline_mark, baseline_unmark

    release = make_release(make_benchmark())
    run = make_run(release, agent_name="Plain")
    viewer = _user("viewer", "leaderboard.view_baseline", is_staff=True)
    with pytest.raises(PermissionDenied):
        baseline_mark(actor=viewer, agent_version=run.agent_version, kind="random")
    assert not Baseline.objects.exists()
    Baseline.objects.create(agent_version=run.agent_version, kind="random")
    adder = _user("adder", "leaderboard.add_baseline", is_staff=True)
    with pytest.raises(PermissionDenied):
        baseline_unmark(actor=adder, agent_version=run.agent_version)
    assert Baseline.objects.filter(agent_version=run.agent_version).exists()


@pytest.mark.parametrize("how", ["private submission", "withdrawn by its submitter", "draft release"])
def test_a_hidden_run_that_is_not_public_otherwise_is_a_404_to_another_account_not_a_410(client, how):
    """A 410 with the reason tells a stranger that the id is a run, and the reason staff wrote
    about it, for a run the visibility rule gives them as a 404 (private, withdrawn, draft)."""
    from submissions.services.visibility import run_hide, run_withdraw

    owner = _user("owner")
    release = make_release(make_benchmark())
    if how == "draft release":
        Release.objects.filter(pk=release.pk).update(published=False)
    run = make_run(release, agent_name="Secret Agent", submitter=owner, is_private=how == "private submission")
    if how == "withdrawn by its submitter":
        run_withdraw(run_id=run.pk, user=owner)
    staffer = _user("staffer", "leaderboard.change_run", is_staff=True)
    run_hide(run_id=run.pk, user=staffer, reason="Secret Agent cheated")
    missing = client.get(reverse("run_detail", args=[run.pk + 1000]))
    for viewer in (None, _user("stranger")):
        if viewer is not None:
            client.force_login(viewer)
        response = client.get(reverse("run_detail", args=[run.pk]))
        assert response.status_code == 404 == missing.status_code
        assert b"Secret Agent" not in response.content
    client.force_login(owner)
    assert client.get(reverse("run_detail", args=[run.pk])).status_code == 200


def test_a_username_that_passes_for_another_accounts_is_refused_at_sign_up(client):
    """Usernames are public ("Submitted by" on every run page, actors in the logs): a
    Cyrillic "a" (U+0430) in "alice" shows as "alice" while Django's case-insensitive check sees a
    different name."""
    _user("alice")
    for lookalike in ("\u0430lice", "al\u0456ce", "ALICE"):
        response = client.post(
            reverse("signup"),
            {"username": lookalike, "password1": "a-long-test-password-1", "password2": "a-long-test-password-1"},
        )
        assert response.status_code == 400, lookalike
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["alice"]
