"""Every JSON write refuses a field it does not read (leaderboard.api_errors.refuse_fields_not_read):
a serializer ignores unknown keys, so a staff "dry_run" lowered a run's level for good, a "dry_run"
hide hid the run, and a webhook sent with "enabled": false was set up and enabled. Each answer is
400 invalid naming the field, and nothing is written. (The scorecard play endpoints:
tests/schemes/test_play_api.py.)"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from leaderboard.models import SigningKey
from submissions.models import WebhookEndpoint

pytestmark = pytest.mark.django_db


def _public_key() -> str:
    raw = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def _refused(response: Any, field: str, expected: str) -> None:
    assert response.status_code == 400, response.content
    assert response.json()["error"] == {
        "code": "invalid",
        "message": f"{field}: unknown field; expected {expected}.",
        "fields": {field: ["Unknown field."]},
    }


def test_a_level_change_with_an_unknown_field_is_refused_and_the_level_stays(world: Any, client_for: Any) -> None:
    run = world.public_run
    before = run.level
    response = client_for(world.staff).post(
        f"/api/v1/admin/runs/{run.pk}/level/", {"level": "revoked", "reason": "probe", "dry_run": True}, format="json"
    )
    _refused(response, "dry_run", "level, reason")
    run.refresh_from_db()
    assert run.level == before and not run.events.filter(level="revoked").exists()


def test_a_hide_with_an_unknown_field_is_refused_and_the_run_stays_public(world: Any, client_for: Any) -> None:
    run = world.public_run
    response = client_for(world.staff).post(
        f"/api/v1/runs/{run.pk}/hide/", {"reason": "probe", "dry_run": True}, format="json"
    )
    _refused(response, "dry_run", "reason")
    run.refresh_from_db()
    assert run.hidden_at is None


def test_a_webhook_with_an_unknown_field_is_refused_and_none_is_set(world: Any, client_for: Any) -> None:
    response = client_for(world.owner).put(
        "/api/v1/account/webhook/", {"url": "https://1.1.1.1/hook", "enabled": False}, format="json"
    )
    _refused(response, "enabled", "url")
    assert not WebhookEndpoint.objects.filter(user=world.owner).exists()


def test_a_key_registration_with_an_unknown_field_is_refused_and_no_key_is_stored(world: Any, client_for: Any) -> None:
    body = {"owner_kind": "evaluator", "owner": "robosuite+robomimic", "public_key": _public_key(), "scope": "all"}
    response = client_for(world.staff).post("/api/v1/admin/signing-keys/", body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert response.json()["error"]["message"].startswith("scope: unknown field; expected owner_kind, owner, ")
    assert not SigningKey.objects.exists()


def test_a_body_with_only_the_fields_read_is_still_accepted(world: Any, client_for: Any) -> None:
    response = client_for(world.staff).post(
        f"/api/v1/runs/{world.public_run.pk}/hide/", {"reason": "evaluator misconfigured"}, format="json"
    )
    assert response.status_code == 200
    world.public_run.refresh_from_db()
    assert world.public_run.hidden_at is not None


def test_an_official_rerun_with_an_unknown_field_is_refused_and_nothing_is_recorded(
    world: Any, client_for: Any
) -> None:
    from leaderboard.models import OfficialRerun

    body = {"results": {"grasp": {"measured": 0.5}}, "notes": "typo of note"}
    response = client_for(world.staff).post(f"/api/v1/admin/runs/{world.public_run.pk}/reruns/", body, format="json")
    _refused(response, "notes", "bundle, results, note")
    assert not OfficialRerun.objects.exists()


def _refused_bodyless(response: Any, field: str) -> None:
    assert response.status_code == 400, response.content
    assert response.json()["error"] == {
        "code": "invalid",
        "message": f"{field}: unknown field; this request reads no body.",
        "fields": {field: ["Unknown field."]},
    }


def test_a_withdraw_with_a_body_field_is_refused_and_the_run_stays_on_the_boards(world: Any, client_for: Any) -> None:
    # A "reason" was read past and the run withdrawn.
    run = world.public_run
    response = client_for(world.owner).post(f"/api/v1/runs/{run.pk}/withdraw/", {"reason": "x"}, format="json")
    _refused_bodyless(response, "reason")
    run.refresh_from_db()
    assert run.withdrawn_at is None


def test_an_unhide_with_a_body_field_is_refused_and_the_run_stays_hidden(world: Any, client_for: Any) -> None:
    from submissions.services.visibility import run_hide

    run = run_hide(run_id=world.public_run.pk, user=world.staff, reason="probe")
    response = client_for(world.staff).post(f"/api/v1/runs/{run.pk}/unhide/", {"bogus": 1}, format="json")
    _refused_bodyless(response, "bogus")
    run.refresh_from_db()
    assert run.hidden_at is not None


def test_a_secret_rotation_with_a_body_field_is_refused_and_the_secret_stays(world: Any, client_for: Any) -> None:
    from submissions.services.notifications import webhook_set

    endpoint, secret = webhook_set(user=world.owner, url="https://1.1.1.1/hook")
    response = client_for(world.owner).post("/api/v1/account/webhook/rotate-secret/", {"bogus": 1}, format="json")
    _refused_bodyless(response, "bogus")
    endpoint.refresh_from_db()
    assert endpoint.secret == secret


def test_a_webhook_removal_with_a_body_field_is_refused_and_the_webhook_stays(world: Any, client_for: Any) -> None:
    from submissions.services.notifications import webhook_set

    webhook_set(user=world.owner, url="https://1.1.1.1/hook")
    response = client_for(world.owner).delete("/api/v1/account/webhook/", {"confirm": True}, format="json")
    _refused_bodyless(response, "confirm")
    assert WebhookEndpoint.objects.filter(user=world.owner).exists()


@pytest.mark.parametrize(
    ("path", "parameter", "reads"),
    [
        ("/api/v1/owed-runs/", "limit=abc", "format"),
        ("/api/v1/admin/signing-keys/", "x=1", "format, limit, offset"),
    ],
)
def test_a_list_refuses_a_query_parameter_it_does_not_read(
    world: Any, client_for: Any, path: str, parameter: str, reads: str
) -> None:
    # ?limit=abc on the owed runs (not paginated) answered every row as if it had been read.
    response = client_for(world.staff).get(f"{path}?{parameter}")
    assert response.status_code == 400
    name = parameter.split("=")[0]
    assert response.json()["error"] == {
        "code": "invalid_query",
        "message": f"{name}: not a parameter of this list; it reads {reads}.",
    }
