"""Admin actions are offered only to staff holding the permission the action writes with
(leaderboard.permissions): seeing a changelist is not enough. Django checks each action's
``permissions=[...]`` both when listing the actions and when one is posted, so a refused
action runs nothing. docs/security-model.md "Actors"."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.contrib.admin import helpers
from django.contrib.auth import get_user_model
from django.urls import reverse

from leaderboard import permissions as perms
from leaderboard.models import Benchmark, Evaluator, Race, SigningKey
from submissions.services.signing_keys import signing_key_register
from tests.staff import staff_grant

pytestmark = pytest.mark.django_db

# (changelist, action, the permission it needs)
ACTIONS = [
    ("leaderboard_release", "publish", perms.PUBLISH_RELEASE),
    ("leaderboard_release", "propose_rescore", perms.ADD_RESCORE),
    ("leaderboard_release", "propose_carry", perms.ADD_RESCORE),
    ("leaderboard_race", "start_races", perms.CHANGE_RACE),
    ("leaderboard_race", "close_races", perms.CHANGE_RACE),
    ("leaderboard_race", "release_races", perms.CHANGE_RACE),
    ("submissions_submission", "reverify", perms.CHANGE_SUBMISSION),
    ("leaderboard_signingkey", "revoke", perms.CHANGE_SIGNING_KEY),
    ("submissions_notificationdelivery", "send_again", perms.CHANGE_NOTIFICATION),
    ("submissions_rescore", "apply", perms.CHANGE_RESCORE),
]


def _view_perm(changelist: str) -> str:
    app_label, model = changelist.split("_", 1)
    return f"{app_label}.view_{model}"


def _offered(client: Any, changelist: str) -> set[str]:
    response = client.get(reverse(f"admin:{changelist}_changelist"))
    assert response.status_code == 200
    form = response.context["action_form"]  # None when no action at all is offered
    return set() if form is None else {name for name, _ in form.fields["action"].choices if name}


@pytest.fixture
def helper(db: Any) -> Any:
    """A staff account the operator gave no permission (a 'view only' helper)."""
    return get_user_model().objects.create_user("helper", password="pw-helper-12345", is_staff=True)


@pytest.mark.parametrize(("changelist", "action", "perm"), ACTIONS)
def test_an_action_is_not_offered_to_staff_who_may_only_view_the_changelist(
    client: Any, helper: Any, changelist: str, action: str, perm: str
) -> None:
    client.force_login(staff_grant(helper, _view_perm(changelist)))
    assert action not in _offered(client, changelist)


@pytest.mark.parametrize(("changelist", "action", "perm"), ACTIONS)
def test_an_action_is_offered_to_staff_given_its_permission(
    client: Any, helper: Any, changelist: str, action: str, perm: str
) -> None:
    client.force_login(staff_grant(helper, _view_perm(changelist), perm))
    assert action in _offered(client, changelist)


@pytest.mark.parametrize(("changelist", "action", "perm"), ACTIONS)
def test_an_action_is_offered_to_a_superuser(client: Any, changelist: str, action: str, perm: str) -> None:
    client.force_login(get_user_model().objects.create_superuser("root", email="", password="pw-root-123456"))
    assert action in _offered(client, changelist)


@pytest.fixture
def embargoed_race(db: Any) -> Race:
    benchmark = Benchmark.objects.create(slug="race-bench", name="Race", scheme=Benchmark.Scheme.RACE)
    return Race.objects.create(benchmark=benchmark, number=1, status=Race.Status.EMBARGOED)


def _post_action(client: Any, changelist: str, action: str, pk: Any) -> Any:
    data = {"action": action, helpers.ACTION_CHECKBOX_NAME: [str(pk)], "index": "0"}
    return client.post(reverse(f"admin:{changelist}_changelist"), data)


def test_posting_the_release_races_action_without_the_permission_releases_nothing(
    client: Any, helper: Any, embargoed_race: Race
) -> None:
    client.force_login(staff_grant(helper, "leaderboard.view_race"))
    response = _post_action(client, "leaderboard_race", "release_races", embargoed_race.pk)
    # No action is offered to this account, so Django ignores the posted one: the changelist again.
    assert response.status_code == 200
    embargoed_race.refresh_from_db()
    assert (embargoed_race.status, embargoed_race.released_at) == (Race.Status.EMBARGOED, None)


def test_posting_the_release_races_action_with_the_permission_releases_the_race(
    client: Any, helper: Any, embargoed_race: Race
) -> None:
    client.force_login(staff_grant(helper, "leaderboard.view_race", perms.CHANGE_RACE))
    assert _post_action(client, "leaderboard_race", "release_races", embargoed_race.pk).status_code == 302
    embargoed_race.refresh_from_db()
    assert embargoed_race.status == Race.Status.RELEASED


def test_posting_the_revoke_action_without_the_permission_leaves_the_key_in_force(client: Any, helper: Any) -> None:
    raw = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    evaluator = Evaluator.objects.create(simulator="sim-one")
    key = signing_key_register(evaluator=evaluator, public_key_b64=base64.b64encode(raw).decode(), user=None)
    client.force_login(staff_grant(helper, "leaderboard.view_signingkey"))
    assert _post_action(client, "leaderboard_signingkey", "revoke", key.pk).status_code == 200
    assert SigningKey.objects.get(pk=key.pk).revoked_at is None
