"""A staff account with some Django permissions gets no more than they say (outsider review):
account powers, groups, agents, validators' accounts, deletions and the gate pages."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.urls import reverse

from leaderboard.models import Agent, Benchmark, Race, Validator
from leaderboard.permissions import STAFF_WRITE_PERMISSIONS
from tests.staff import staff_with

pytestmark = pytest.mark.django_db


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def change_form(client: Client, url: str) -> dict[str, Any]:
    """The change form's current values, as a browser would post them back."""
    form = client.get(url).context["adminform"].form
    data: dict[str, Any] = {}
    for name, field in form.fields.items():
        value = form.initial.get(name, field.initial)
        if hasattr(value, "all"):
            value = [str(item.pk) for item in value.all()]
        elif isinstance(value, (list, tuple)):
            value = [str(getattr(item, "pk", item)) for item in value]
        if hasattr(value, "date") and hasattr(value, "time"):  # the admin's split date and time widget
            data[f"{name}_0"], data[f"{name}_1"] = value.date().isoformat(), value.time().strftime("%H:%M:%S")
        elif value is not None and value is not False:
            data[name] = value if value is not True else "on"
    return data


def test_a_helper_who_may_change_users_cannot_give_itself_powers(django_user_model) -> None:
    helper = staff_with("helper", "auth.view_user", "auth.change_user")
    boss = django_user_model.objects.create_superuser("boss", password="a-long-test-password-1")
    member = django_user_model.objects.create_user("member", password="a-long-test-password-1")
    client = signed_in(helper)
    # Staff and superuser accounts, its own included, are not its to change (it may view them,
    # read-only, as view_user allows); nor their passwords.
    for account in (helper, boss):
        url = reverse("admin:auth_user_change", args=[account.pk])
        assert client.post(url, {"username": account.username, "is_superuser": "on"}).status_code == 403
    password = reverse("admin:auth_user_password_change", args=[boss.pk])
    new_password = {"password1": "x-new-pass-123456", "password2": "x-new-pass-123456"}
    assert client.post(password, new_password).status_code == 403
    # An ordinary account it may change (deactivate a spammer), but not promote.
    url = reverse("admin:auth_user_change", args=[member.pk])
    data = change_form(client, url)
    assert "is_superuser" not in data and "is_staff" not in data
    client.post(url, {**data, "is_superuser": "on", "is_staff": "on", "is_active": ""})
    member.refresh_from_db()
    helper.refresh_from_db()
    boss.refresh_from_db()
    assert (member.is_active, member.is_staff, member.is_superuser) == (False, False, False)
    assert not helper.is_superuser and boss.check_password("a-long-test-password-1")


def test_a_helper_who_may_change_groups_cannot_grant_its_group_a_permission() -> None:
    helper = staff_with("helper", "auth.view_group", "auth.change_group")
    group = Group.objects.create(name="helpers")
    helper.groups.add(group)
    client = signed_in(helper)
    run_change = Permission.objects.get(content_type__app_label="leaderboard", codename="change_run")
    url = reverse("admin:auth_group_change", args=[group.pk])
    response = client.post(url, {"name": "helpers", "permissions": [str(run_change.pk)]})
    assert response.status_code == 403
    assert not group.permissions.exists()


def test_an_owned_agent_is_read_only_in_the_admin_and_none_can_be_added(django_user_model) -> None:
    owner = django_user_model.objects.create_user("owner")
    agent = Agent.objects.create(slug="robo-agent", name="Robo Agent", owner=owner)
    helper = staff_with("helper", "leaderboard.view_agent", "leaderboard.change_agent", "leaderboard.add_agent")
    client = signed_in(helper)
    url = reverse("admin:leaderboard_agent_change", args=[agent.pk])
    client.post(url, {"slug": "robo-agent", "name": "R\u043ebo Agent", "owner": str(helper.pk)})
    agent.refresh_from_db()
    assert (agent.name, agent.owner) == ("Robo Agent", owner)
    assert client.get(reverse("admin:leaderboard_agent_add")).status_code == 403


def test_staff_give_an_owner_less_agent_its_owner(django_user_model) -> None:
    owner = django_user_model.objects.create_user("owner")
    agent = Agent.objects.create(slug="old-agent", name="Old Agent")
    client = signed_in(staff_with("helper", "leaderboard.view_agent", "leaderboard.change_agent"))
    response = client.post(reverse("admin:leaderboard_agent_change", args=[agent.pk]), {"owner": str(owner.pk)})
    assert response.status_code == 302
    agent.refresh_from_db()
    assert (agent.owner, agent.name) == (owner, "Old Agent")


def test_who_acts_for_a_validator_needs_change_race(django_user_model) -> None:
    validator = Validator.objects.create(slug="val-one", name="Val One")
    helper = staff_with("helper", "leaderboard.view_validator", "leaderboard.change_validator")
    url = reverse("admin:leaderboard_validator_change", args=[validator.pk])
    signed_in(helper).post(url, {"slug": "val-one", "name": "Val One", "accounts": [str(helper.pk)]})
    assert not validator.accounts.exists()
    racer = staff_with("racer", "leaderboard.view_validator", "leaderboard.change_validator", "leaderboard.change_race")
    signed_in(racer).post(url, {"slug": "val-one", "name": "Val One", "accounts": [str(racer.pk)]})
    assert list(validator.accounts.all()) == [racer]


def test_a_helper_holding_a_delete_permission_cannot_delete_a_registry_row() -> None:
    benchmark = Benchmark.objects.create(slug="shop", name="Shop", scheme=Benchmark.Scheme.RACE)
    race = Race.objects.create(benchmark=benchmark, number=1, status=Race.Status.RUNNING)
    helper = staff_with("helper", "leaderboard.view_race", "leaderboard.delete_race")
    client = signed_in(helper)
    client.post(
        reverse("admin:leaderboard_race_changelist"),
        {"action": "delete_selected", "index": "0", "_selected_action": [str(race.pk)], "post": "yes"},
    )
    assert client.get(reverse("admin:leaderboard_race_delete", args=[race.pk])).status_code == 403
    assert Race.objects.filter(pk=race.pk).exists()


def test_a_maintainer_reaches_the_gate_pages_the_gate_services_allow(django_user_model) -> None:
    from leaderboard.models import Release, ReleaseTask
    from tests.website.conftest import make_task

    benchmark = Benchmark.objects.create(slug="b", name="B")
    release = Release.objects.create(
        benchmark=benchmark, version="1", required_task_set_hash="0" * 64, manifest_sha256="0" * 64
    )
    task = make_task(benchmark, "t")
    row = ReleaseTask.objects.create(release=release, task=task, position=0, genre="reproduction", paper_value=0.5)
    maintainer = staff_with("maintainer", "leaderboard.view_releasetask", *STAFF_WRITE_PERMISSIONS)
    url = reverse("admin:leaderboard_releasetask_sign_off", args=[row.pk])
    assert signed_in(maintainer).get(url).status_code == 200
    # A helper without the gate services' permission is refused on the page too.
    assert signed_in(staff_with("viewer", "leaderboard.view_releasetask")).get(url).status_code == 403


def test_an_agent_version_cannot_be_added_in_the_admin(django_user_model) -> None:
    boss = django_user_model.objects.create_superuser("boss", password="a-long-test-password-1")
    client = signed_in(boss)
    assert client.get(reverse("admin:leaderboard_agentversion_add")).status_code == 403
    assert client.post(reverse("admin:leaderboard_agentversion_add"), {"version": "1"}).status_code == 403


def test_an_evaluators_simulator_and_a_validators_slug_cannot_be_renamed(django_user_model) -> None:
    from leaderboard.models import Evaluator

    boss = django_user_model.objects.create_superuser("boss", password="a-long-test-password-1")
    client = signed_in(boss)
    evaluator = Evaluator.objects.create(simulator="carla", name="CARLA")
    response = client.post(
        reverse("admin:leaderboard_evaluator_change", args=[evaluator.pk]), {"simulator": "carla-0.9", "name": "C"}
    )
    assert response.status_code == 302
    evaluator.refresh_from_db()
    assert (evaluator.simulator, evaluator.name) == ("carla", "C")
    validator = Validator.objects.create(slug="val-one", name="Val One")
    url = reverse("admin:leaderboard_validator_change", args=[validator.pk])
    assert client.post(url, {"slug": "val-two", "name": "Val 1"}).status_code == 302
    validator.refresh_from_db()
    assert (validator.slug, validator.name) == ("val-one", "Val 1")
    # A new one is named when it is added.
    client.post(reverse("admin:leaderboard_evaluator_add"), {"simulator": "mujoco", "name": "MuJoCo"})
    assert Evaluator.objects.filter(simulator="mujoco").exists()


def test_revealed_hidden_levels_cannot_be_hidden_again(django_user_model) -> None:
    from leaderboard.models import Release

    boss = django_user_model.objects.create_superuser("boss", password="a-long-test-password-1")
    benchmark = Benchmark.objects.create(slug="sokoban", name="Sokoban", scheme="scorecard")
    release = Release.objects.create(
        benchmark=benchmark, version="1", required_task_set_hash="0" * 64, manifest_sha256="0" * 64, published=True
    )
    client = signed_in(boss)
    url = reverse("admin:leaderboard_release_change", args=[release.pk])

    def editable() -> set[str]:
        return set(client.get(url).context["adminform"].form.fields)

    assert "reveal_hidden_levels" in editable()
    Release.objects.filter(pk=release.pk).update(reveal_hidden_levels=True)
    assert "reveal_hidden_levels" not in editable()
    client.post(url, {**change_form(client, url), "reveal_hidden_levels": ""})
    release.refresh_from_db()
    assert release.reveal_hidden_levels is True
