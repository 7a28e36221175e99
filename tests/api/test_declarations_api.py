"""Issue 13 over the API: an agent version's declaration (its owner writes) and the baseline
mark (staff write), each with an owner, another account, anonymous and staff."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from rest_framework.test import APIClient

from leaderboard.models import AgentVersionMeta, Baseline
from leaderboard.selectors.standing_ranks import standings_ranked
from leaderboard.services.paper_gap_standings import standings_refresh
from tests.website.conftest import make_benchmark, make_release, make_run, make_user
from tests.website.declarations_factories import declare, own

pytestmark = pytest.mark.django_db

BODY = {
    "organisation": "Acme Labs",
    "base_models": ["gpt-x", "helper-1"],
    "weights": "open",
    "scaffold_name": "OpenHands",
    "scaffold_version": "0.9.1",
    "code_url": "https://example.org/code",
    "description_md": "Plans with **search**.",
    "declared_cost_usd": 4.25,
}


@pytest.fixture
def world():
    release = make_release(make_benchmark())
    owner = make_user("owner")
    run = make_run(release, agent_name="Alpha", submitter=owner)
    own(run, owner)
    other = make_run(release, agent_name="Bravo", score=0.5)
    return {
        "release": release,
        "run": run,
        "other_run": other,
        "owner": owner,
        "intruder": make_user("intruder"),
        "staff": make_user("staffer", is_staff=True),
        # Staff without the baseline permissions (make_user grants every staff-write one).
        "helper": get_user_model().objects.create_user("helper", password="pw-helper-12345", is_staff=True),
    }


def client_for(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def meta_url(agent: str = "alpha", version: str = "1.0") -> str:
    return reverse("api-agent-version-metadata", args=[agent, version])


def baseline_url(agent: str = "bravo", version: str = "1.0") -> str:
    return reverse("api-agent-version-baseline", args=[agent, version])


# --- declarations ------------------------------------------------------------------------------


def test_the_owner_puts_a_declaration_and_anyone_reads_it(world):
    response = client_for(world["owner"]).put(meta_url(), BODY, format="json")
    assert response.status_code == 200, response.content
    meta = AgentVersionMeta.objects.get(agent_version=world["run"].agent_version)
    assert meta.base_models == ["gpt-x", "helper-1"] and str(meta.declared_cost_usd) == "4.2500"
    read = client_for().get(meta_url()).json()
    assert read["declared"] is True
    assert read["organisation"] == "Acme Labs" and read["base_models"] == ["gpt-x", "helper-1"]
    assert read["declared_cost_usd"] == 4.25


@pytest.mark.parametrize(
    ("who", "status", "code"),
    [("anonymous", 401, "not_authenticated"), ("intruder", 403, "agent_not_yours"), ("staff", 403, "agent_not_yours")],
)
def test_only_the_owner_may_declare(world, who, status, code):
    user = None if who == "anonymous" else world[who]
    response = client_for(user).put(meta_url(), BODY, format="json")
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert not AgentVersionMeta.objects.exists()


def test_a_private_only_version_is_not_found_for_another_account(world):
    owner = world["owner"]
    run = make_run(world["release"], agent_name="Secret", submitter=owner, is_private=True)
    own(run, owner)
    for user in (world["intruder"], None):
        client = client_for(user)
        assert client.get(meta_url("secret")).status_code == 404
    response = client_for(world["intruder"]).put(meta_url("secret"), BODY, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
    assert client_for(owner).put(meta_url("secret"), BODY, format="json").status_code == 200


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"code_url": "javascript:alert(1)"}, "code_url"),
        ({"paper_url": "ftp://example.org/p"}, "paper_url"),
        ({"weights": "half"}, "weights"),
        ({"base_models": "gpt-x"}, "base_models"),
        ({"base_models": ["a,b"]}, "base_models"),
        ({"base_models": [f"m{i}" for i in range(9)]}, "base_models"),
        ({"declared_cost_usd": -1}, "declared_cost_usd"),
        # Decimal() reads these too; the page would show them otherwise than typed.
        ({"declared_cost_usd": "1_000"}, "declared_cost_usd"),
        ({"declared_cost_usd": "-0"}, "declared_cost_usd"),
        ({"declared_cost_usd": "\u0663"}, "declared_cost_usd"),
        ({"declared_cost_usd": "1e3"}, "declared_cost_usd"),
        ({"organisation": {"x": 1}}, "organisation"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_a_bad_declaration_is_refused_with_its_field_named(world, change, field):
    response = client_for(world["owner"]).put(meta_url(), {**BODY, **change}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert field in error["fields"]
    assert not AgentVersionMeta.objects.exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"scaffold_version": 2}, "scaffold_version: Expected a string, got number."),
        ({"organisation": True}, "organisation: Expected a string, got boolean."),
        ({"declared_cost_usd": True}, "declared_cost_usd: Expected a number or a string, got boolean."),
    ],
)
def test_a_declaration_field_of_the_wrong_json_type_is_refused_naming_it_and_stores_nothing(world, change, message):
    # The number 2 was stored as the scaffold version "2".
    response = client_for(world["owner"]).put(meta_url(), {**BODY, **change}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["message"]) == ("invalid", message)
    assert list(error["fields"]) == list(change)
    assert not AgentVersionMeta.objects.exists()


def test_a_declaration_field_the_form_does_not_read_is_refused_as_every_api_body_refuses_it(world):
    response = client_for(world["owner"]).put(meta_url(), {**BODY, "organization": "Acme"}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and error["fields"] == {"organization": ["Unknown field."]}
    assert error["message"].startswith("organization: unknown field; expected ")
    assert not AgentVersionMeta.objects.exists()


def test_nothing_declared_is_a_404(world):
    response = client_for().get(meta_url())
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")


# --- baselines ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "status", "code"),
    [
        ("anonymous", 401, "not_authenticated"),
        ("intruder", 403, "permission_denied"),
        ("owner", 403, "permission_denied"),
        ("helper", 403, "permission_denied"),
    ],
)
def test_only_staff_mark_baselines(world, who, status, code):
    user = None if who == "anonymous" else world[who]
    for method in ("put", "delete"):
        response = getattr(client_for(user), method)(baseline_url("alpha"), {"kind": "paper"}, format="json")
        assert response.status_code == status
        assert response.json()["error"]["code"] == code
    assert not Baseline.objects.exists()


def test_staff_mark_and_unmark_a_baseline_and_the_ranks_follow(world):
    standings_refresh(release=world["release"])
    staff = client_for(world["staff"])
    response = staff.put(baseline_url("alpha"), {"kind": "paper", "note": "the paper's method"}, format="json")
    assert response.status_code == 200
    assert response.json()["kind"] == "paper"
    assert Baseline.objects.get().marked_by == world["staff"]
    assert list(standings_ranked().filter(tab="overall").values_list("agent_name", "rank")) == [("Bravo", 1)]

    assert staff.delete(baseline_url("alpha")).status_code == 204
    assert not Baseline.objects.exists()
    ranks = dict(standings_ranked().filter(tab="overall").values_list("agent_name", "rank"))
    assert ranks == {"Alpha": 1, "Bravo": 2}
    response = staff.delete(baseline_url("alpha"))
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")


def test_a_bad_baseline_kind_is_refused(world):
    response = client_for(world["staff"]).put(baseline_url("alpha"), {"kind": "gold"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid" and "kind" in response.json()["error"]["fields"]
    assert not Baseline.objects.exists()


def test_a_baseline_note_sent_as_a_number_is_refused_naming_it_and_marks_nothing(world):
    # DRF's CharField stored the number 0 as the note "0".
    response = client_for(world["staff"]).put(baseline_url("alpha"), {"kind": "paper", "note": 0}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "code": "invalid",
            "message": "note: Expected a string, got number.",
            "fields": {"note": ["Expected a string, got number."]},
        }
    }
    assert not Baseline.objects.exists()


def test_a_baseline_kind_sent_as_a_boolean_is_refused_naming_it_and_marks_nothing(world):
    response = client_for(world["staff"]).put(baseline_url("alpha"), {"kind": True}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert response.json()["error"]["fields"] == {"kind": ["Expected a string, got boolean."]}
    assert not Baseline.objects.exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([{"kind": "other"}], "Expected a JSON object."),
        ("x", "Expected a JSON object."),
        ({"knd": "random"}, "knd: unknown field; expected kind, note."),
    ],
)
def test_a_baseline_body_that_is_not_its_fields_is_refused_and_keeps_the_mark_it_had(world, body, message):
    # Each was read as {} and replaced the mark with kind "other" and no note.
    staff = client_for(world["staff"])
    assert staff.put(baseline_url("alpha"), {"kind": "paper", "note": "Table 3"}, format="json").status_code == 200
    response = staff.put(baseline_url("alpha"), body, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid")
    assert response.json()["error"]["message"] == message
    assert Baseline.objects.values_list("kind", "note").get() == ("paper", "Table 3")


# --- the leaderboard endpoint ------------------------------------------------------------------


def test_the_leaderboard_carries_cost_and_declared_fields_and_refuses_a_bad_filter(world):
    declare(world["run"], organisation="Acme Labs", weights="open")
    url = reverse("api-leaderboard", args=[world["release"].pk, "overall"])
    rows = client_for().get(url + "?weights=open").json()["results"]
    assert [(r["agent_name"], r["organisation_declared"], r["weights_declared"]) for r in rows] == [
        ("Alpha", "Acme Labs", "open")
    ]
    assert rows[0]["cost_usd"] is None and rows[0]["cost_basis"] is None
    response = client_for().get(url + "?since=soon")
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_query")


def test_a_release_price_table_is_public_and_a_draft_release_is_not_found(world):
    from decimal import Decimal

    from leaderboard.models import Release, ReleasePrice

    release = world["release"]
    ReleasePrice.objects.create(release=release, model="*", input_usd_per_mtok=Decimal(3), output_usd_per_mtok=15)
    url = reverse("api-release-prices", args=[release.pk])
    assert client_for().get(url).json() == [{"model": "*", "input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0}]
    Release.objects.filter(pk=release.pk).update(published=False)
    response = client_for(world["intruder"]).get(url)
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
    assert client_for(world["staff"]).get(url).status_code == 200
