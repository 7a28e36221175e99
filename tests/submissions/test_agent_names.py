"""Agent names as identities (submissions.services.agents): a name is its slug, so another
account's agent cannot be claimed in any spelling, and no new agent is named with characters
its slug would drop, which would let it pass for another account's agent on every board.

Tried through a challenge (API and upload page) and a bundle; race entries and scorecards in
tests/schemes/test_agent_names_schemes.py. Exact codes and the database state after."""

from __future__ import annotations

import io

import pytest
from rest_framework.test import APIClient

from leaderboard.models import Agent, AgentVersion, Run
from submissions.models import Submission, SubmissionChallenge
from tests.api_clients import api_for
from tests.staff import staff_grant

pytestmark = pytest.mark.django_db

# The owner's agent is "Alice Agent" (slug alice-agent). Each variant is the same slug.
SAME_AGENT = {
    "case": "ALICE AGENT",
    "spacing": "  alice   agent ",
    "punctuation": "Alice-Agent!",
    "no-break space": "Alice\u00a0Agent",
    "fullwidth (NFKC)": "\uff21\uff4c\uff49\uff43\uff45 \uff21\uff47\uff45\uff4e\uff54",
    "accent": "Alic\u00e9 Agent",
    "zero-width space": "Ali\u200bce Agent",
}
# Each of these reads as "Alice Agent" (or close) but its slug drops a character, so it would be
# a distinct agent displayed under another account's name.
LOOKALIKE = {
    "Cyrillic A": "\u0410lice Agent",
    "Cyrillic e": "Alice Ag\u0435nt",
    "Greek omicron": "Alice Ag\u03bfnt",
    "right-to-left override": "\u202etnegA ecilA",
    "Unicode hyphen": "Alice\u2010Agent",
    # Compatibility characters: their slug keeps a letter, but not the one shown.
    "long s (reads as f)": "\u017fast Agent",
    "Roman numeral one": "A\u2160ice Agent",
    "fi ligature": "\ufb01ne Agent",
}


def ask_challenge(client: APIClient, agent_name: str, version: str = "1"):
    return client.post(
        "/api/v1/challenges/",
        {"benchmark": "ale-robotics", "release": "0.5", "agent_name": agent_name, "agent_version": version},
        format="json",
    )


@pytest.fixture
def staff(make_user):
    user = make_user("staffer")
    user.is_staff = True
    user.save()
    return staff_grant(user)  # a maintainer: every staff-write permission


@pytest.fixture
def alice_agent(owner, demo_release):
    assert ask_challenge(api_for(owner), "Alice Agent").status_code == 201
    return Agent.objects.get(slug="alice-agent")


@pytest.mark.parametrize("name", SAME_AGENT.values(), ids=SAME_AGENT.keys())
def test_a_challenge_under_a_variant_of_another_accounts_agent_name_is_refused(alice_agent, stranger, name):
    response = ask_challenge(api_for(stranger), name, version="2")
    assert (response.status_code, response.json()["error"]["code"]) == (403, "agent_not_yours")
    assert list(Agent.objects.values_list("slug", flat=True)) == ["alice-agent"]
    assert list(AgentVersion.objects.values_list("version", flat=True)) == ["1"]
    assert not SubmissionChallenge.objects.filter(user=stranger).exists()


@pytest.mark.parametrize("name", ["Alice Agent", *SAME_AGENT.values()], ids=["same", *SAME_AGENT.keys()])
def test_a_challenge_under_a_version_another_account_already_filed_is_refused(alice_agent, stranger, name):
    """The known version's path (one read of the version with its agent) keeps the ownership rule."""
    response = ask_challenge(api_for(stranger), name, version="1")
    assert (response.status_code, response.json()["error"]["code"]) == (403, "agent_not_yours")
    assert list(AgentVersion.objects.values_list("agent__slug", "version")) == [("alice-agent", "1")]
    assert not SubmissionChallenge.objects.filter(user=stranger).exists()


def test_claiming_a_known_version_reads_it_with_its_agent_in_one_statement_and_writes_nothing(alice_agent, owner):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from submissions.services.agents import agent_version_claim

    known = AgentVersion.objects.get(agent=alice_agent, version="1")
    with CaptureQueriesContext(connection) as queries:
        claimed = agent_version_claim(name="ALICE agent", version="1", account=owner)
    assert (claimed.pk, claimed.agent.pk) == (known.pk, alice_agent.pk)
    assert [query["sql"].split()[0] for query in queries.captured_queries] == ["SELECT"]
    assert AgentVersion.objects.count() == 1


@pytest.mark.parametrize("name", SAME_AGENT.values(), ids=SAME_AGENT.keys())
def test_the_owner_gets_a_challenge_under_any_variant_of_their_agent_name(alice_agent, owner, name):
    response = ask_challenge(api_for(owner), name, version="2")
    assert response.status_code == 201, response.content
    assert response.json()["agent_name"] == "Alice Agent"
    assert list(Agent.objects.values_list("slug", flat=True)) == ["alice-agent"]


@pytest.mark.parametrize("who", ["owner", "stranger", "staff"])
@pytest.mark.parametrize("name", LOOKALIKE.values(), ids=LOOKALIKE.keys())
def test_a_new_agent_name_with_characters_its_identity_would_drop_is_refused_for_everyone(
    alice_agent, request, who, name
):
    response = ask_challenge(api_for(request.getfixturevalue(who)), name)
    assert (response.status_code, response.json()["error"]["code"]) == (400, "agent_name_ambiguous")
    assert "\\u" in response.json()["error"]["message"]  # names the character, escaped
    assert list(Agent.objects.values_list("slug", flat=True)) == ["alice-agent"]
    assert SubmissionChallenge.objects.count() == 1


def test_anonymous_gets_401_before_the_name_is_looked_at(alice_agent):
    response = ask_challenge(api_for(), LOOKALIKE["Cyrillic A"])
    assert (response.status_code, response.json()["error"]["code"]) == (401, "not_authenticated")
    assert Agent.objects.count() == 1


def test_the_upload_pages_challenge_form_refuses_a_lookalike_name(alice_agent, stranger, client):
    client.force_login(stranger)
    response = client.post(
        "/submit/challenge/",
        {"benchmark": "ale-robotics", "release": "0.5", "agent_name": LOOKALIKE["Cyrillic A"], "agent_version": "1"},
    )
    assert response.status_code == 400
    assert "agent_name_ambiguous" in response.content.decode()
    assert list(Agent.objects.values_list("slug", flat=True)) == ["alice-agent"]


def test_the_owner_of_an_agent_named_before_the_rule_still_files_under_it(owner, stranger, demo_release):
    Agent.objects.create(slug="lice-agent", name="\u0410lice Agent", owner=owner)
    assert ask_challenge(api_for(owner), "\u0410lice Agent", version="3").status_code == 201
    refused = ask_challenge(api_for(stranger), "\u0410lice Agent")
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "agent_not_yours")
    assert list(AgentVersion.objects.values_list("agent__slug", "version")) == [("lice-agent", "3")]


def test_a_bundle_naming_a_lookalike_agent_is_rejected_and_writes_no_agent(
    alice_agent, stranger, seal, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api_for(stranger).post(
            "/api/v1/submissions/",
            {"benchmark": "ale-robotics", "bundle": io.BytesIO(seal(agent_name=LOOKALIKE["Cyrillic e"], seed=5))},
            format="multipart",
        )
    assert response.status_code == 201, response.content
    submission = Submission.objects.get(pk=response.json()["id"])
    assert (submission.verdict, submission.error_code) == ("rejected", "agent_name_ambiguous")
    assert not Run.objects.exists()
    assert list(Agent.objects.values_list("slug", flat=True)) == ["alice-agent"]
