"""Agent names as identities on the race and scorecard entry points (the rule and the
paper-gap paths: tests/submissions/test_agent_names.py). A variant of another account's agent
name is that agent (403 agent_not_yours); a new name with a character its slug would drop is
refused for everyone (400 agent_name_ambiguous); nothing is written either way."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from leaderboard.models import Agent, RaceEntry
from submissions.models import Card
from tests.api_clients import api_for
from tests.staff import staff_grant

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_daily_counters")]

VARIANT = "ALICE\u00a0\uff33hopper"  # case, a no-break space and a fullwidth S: slug alice-shopper
LOOKALIKE = "\u0410lice Shopper"  # a Cyrillic A: slug lice-shopper, shown as "Alice Shopper"


@pytest.fixture
def alice(make_user):
    return make_user("alice")


@pytest.fixture
def bob(make_user):
    return make_user("bob")


@pytest.fixture
def staff(make_user):
    user = make_user("staffer")
    user.is_staff = True
    user.save()
    return staff_grant(user)  # a maintainer: every staff-write permission


def enter_race(client: APIClient, agent_name: str, version: str = "1"):
    body = {"benchmark": "shop-race", "race": 1, "agent_name": agent_name, "agent_version": version}
    return client.post("/api/v1/race-entries/", body, format="json")


def open_card(client: APIClient, agent_name: str):
    body = {"benchmark": "sokoban-play", "agent": {"name": agent_name, "version": "1"}}
    return client.post("/api/v1/scorecards/", body, format="json")


def error(response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


def test_a_race_entry_under_a_variant_of_another_accounts_agent_name_is_refused(running, alice, bob):
    assert enter_race(api_for(alice), "Alice Shopper").status_code == 201
    assert error(enter_race(api_for(bob), VARIANT, version="2")) == (403, "agent_not_yours")
    assert list(RaceEntry.objects.values_list("entered_by__username", "agent_version__version")) == [("alice", "1")]


@pytest.mark.parametrize("who", ["alice", "bob", "staff"])
def test_a_race_entry_under_a_new_lookalike_agent_name_is_refused_for_everyone(running, alice, request, who):
    assert enter_race(api_for(alice), "Alice Shopper").status_code == 201
    assert error(enter_race(api_for(request.getfixturevalue(who)), LOOKALIKE)) == (400, "agent_name_ambiguous")
    assert list(Agent.objects.values_list("slug", flat=True)) == ["alice-shopper"]
    assert RaceEntry.objects.count() == 1


def test_anonymous_cannot_enter_a_race(running):
    assert error(enter_race(api_for(), LOOKALIKE)) == (401, "not_authenticated")
    assert not Agent.objects.exists()


def test_the_race_entry_form_refuses_a_lookalike_agent_name(running, alice, bob, client):
    assert enter_race(api_for(alice), "Alice Shopper").status_code == 201
    client.force_login(bob)
    body = {"benchmark": "shop-race", "race": "1", "agent_name": LOOKALIKE, "agent_version": "1"}
    response = client.post("/submit/race-entries/", body)
    assert response.status_code == 400
    assert "agent_name_ambiguous" in response.content.decode()
    assert RaceEntry.objects.count() == 1


def test_a_card_under_a_variant_of_another_accounts_agent_name_is_refused(play_release, alice, bob):
    assert open_card(api_for(alice), "Alice Shopper").status_code == 201
    assert error(open_card(api_for(bob), VARIANT)) == (403, "agent_not_yours")
    assert list(Card.objects.values_list("owner__username", flat=True)) == ["alice"]


@pytest.mark.parametrize("who", ["alice", "bob", "staff"])
def test_a_card_under_a_new_lookalike_agent_name_is_refused_for_everyone(play_release, alice, request, who):
    assert open_card(api_for(alice), "Alice Shopper").status_code == 201
    assert error(open_card(api_for(request.getfixturevalue(who)), LOOKALIKE)) == (400, "agent_name_ambiguous")
    assert list(Agent.objects.values_list("slug", flat=True)) == ["alice-shopper"]
    assert Card.objects.count() == 1


def test_a_name_with_no_letter_its_identity_keeps_is_told_which_character_in_the_field_it_came_in(
    running, play_release, alice
):
    # "Новый" has letters, none an agent's slug keeps: it was agent_invalid saying the name needs a
    # letter and pointing at manifest.json, which an API form does not have.
    response = enter_race(api_for(alice), "\u041d\u043e\u0432\u044b\u0439")
    assert error(response) == (400, "agent_name_ambiguous")
    expected = "agent_name: agent name '\\u041d\\u043e\\u0432\\u044b\\u0439' has the character '\\u041d'"
    assert response.json()["error"]["message"].startswith(expected)
    card = open_card(api_for(alice), "\u65e5\u672c")
    assert error(card) == (400, "agent_name_ambiguous")
    assert card.json()["error"]["message"].startswith("agent: agent name")
    punctuation = enter_race(api_for(alice), "--")
    assert error(punctuation) == (400, "agent_invalid")
    assert punctuation.json()["error"]["message"] == (
        "agent_name: agent name '--' has no letter or digit; an agent's identity (its slug) is made of its letters "
        "and digits"
    )
    assert not Agent.objects.exists() and not Card.objects.exists() and not RaceEntry.objects.exists()


def test_the_race_entry_form_refuses_a_name_too_long_rather_than_cutting_it(running, bob, client):
    # Cut to 100 characters, the entry claimed an agent named by the first 100.
    client.force_login(bob)
    body = {"benchmark": "shop-race", "race": "1", "agent_name": "Z" * 1000, "agent_version": "1"}
    response = client.post("/submit/race-entries/", body)
    assert response.status_code == 400
    assert "agent_name: at most 100 characters, got 1000." in response.content.decode()
    assert not RaceEntry.objects.exists() and not Agent.objects.exists()
