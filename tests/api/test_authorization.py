"""The authorization matrix: every endpoint as anonymous, owner, another user and staff,
and a walk over every endpoint searching response bodies for withheld values."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.core.files.uploadedfile import SimpleUploadedFile

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "owner", "other", "staff")


def _public_key_b64() -> str:
    raw = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def _task_id(world: Any, slug: str) -> int:
    return world.release.release_tasks.get(task__slug=slug).task_id


def _draft_task_id(world: Any) -> int:
    return world.draft.release_tasks.get().task_id


def _reads(world: Any) -> list[tuple[str, tuple[int, int, int, int]]]:
    """(path, expected status for anonymous, owner, other, staff)."""
    pub, draft = world.release.pk, world.draft.pk
    return [
        ("/api/v1/benchmarks/", (200, 200, 200, 200)),
        ("/api/v1/benchmarks/ale-robotics/", (200, 200, 200, 200)),
        ("/api/v1/releases/", (200, 200, 200, 200)),
        (f"/api/v1/releases/{pub}/", (200, 200, 200, 200)),
        (f"/api/v1/releases/{draft}/", (404, 404, 404, 200)),
        ("/api/v1/tasks/", (200, 200, 200, 200)),
        (f"/api/v1/tasks/{_task_id(world, 'stack-blocks')}/", (200, 200, 200, 200)),
        (f"/api/v1/tasks/{_draft_task_id(world)}/", (404, 404, 404, 200)),
        (f"/api/v1/releases/{pub}/leaderboard/overall/", (200, 200, 200, 200)),
        (f"/api/v1/releases/{pub}/leaderboard/reproduction/", (200, 200, 200, 200)),
        (f"/api/v1/releases/{draft}/leaderboard/overall/", (404, 404, 404, 200)),
        ("/api/v1/runs/", (200, 200, 200, 200)),
        (f"/api/v1/runs/{world.public_run.pk}/", (200, 200, 200, 200)),
        (f"/api/v1/runs/{world.private_run.pk}/", (404, 200, 404, 200)),
        (f"/api/v1/runs/{world.draft_run.pk}/", (404, 200, 404, 200)),
        ("/api/v1/agents/", (200, 200, 200, 200)),
        ("/api/v1/agents/robo-agent/", (200, 200, 200, 200)),
        ("/api/v1/submissions/", (401, 200, 200, 200)),
        (f"/api/v1/submissions/{world.submission.pk}/", (401, 200, 404, 200)),
        ("/api/v1/site-key/", (200, 200, 200, 200)),
        ("/api/v1/admin/signing-keys/", (401, 403, 403, 200)),
        ("/api/v1/schema/", (200, 200, 200, 200)),
        ("/api/v1/docs/", (200, 200, 200, 200)),
    ]


@pytest.fixture
def clients(world: Any, client_for: Any, settings: Any) -> dict[str, Any]:
    import pyrage

    settings.PODIUM_SITE_KEYS = str(pyrage.x25519.Identity.generate())
    return {
        "anonymous": client_for(None),
        "owner": client_for(world.owner),
        "other": client_for(world.other),
        "staff": client_for(world.staff),
    }


def test_every_read_endpoint_answers_each_role_as_the_matrix_says(world: Any, clients: dict[str, Any]) -> None:
    failures = []
    for path, expected in _reads(world):
        for role, status in zip(ROLES, expected, strict=True):
            got = clients[role].get(path).status_code
            if got != status:
                failures.append(f"{role} GET {path}: expected {status}, got {got}")
    assert failures == []


def test_only_staff_register_signing_keys(world: Any, clients: dict[str, Any]) -> None:
    payload = {"owner_kind": "evaluator", "owner": "robosuite+robomimic", "public_key": _public_key_b64()}
    got = {
        role: clients[role].post("/api/v1/admin/signing-keys/", payload, format="json").status_code for role in ROLES
    }
    assert got == {"anonymous": 401, "owner": 403, "other": 403, "staff": 201}


def test_only_staff_sync_manifests(world: Any, clients: dict[str, Any]) -> None:
    got = {
        role: clients[role]
        .post(
            "/api/v1/admin/releases/sync/", {"manifest": SimpleUploadedFile("m.zip", b"not a zip")}, format="multipart"
        )
        .status_code
        for role in ROLES
    }
    # Staff get through to the manifest check (which refuses this non-zip with a 400).
    assert got == {"anonymous": 401, "owner": 403, "other": 403, "staff": 400}


def test_only_staff_release_races(world: Any, clients: dict[str, Any]) -> None:
    path = f"/api/v1/admin/races/{world.race.pk}/release/"
    got = {role: clients[role].post(path).status_code for role in ("anonymous", "owner", "other")}
    assert got == {"anonymous": 401, "owner": 403, "other": 403}
    world.race.refresh_from_db()
    assert world.race.status == "embargoed"


def test_only_signed_in_users_upload(world: Any, clients: dict[str, Any], media: Any) -> None:
    got = {}
    for n, role in enumerate(ROLES):
        form = {"bundle": SimpleUploadedFile("b.age", f"bundle {n}".encode()), "benchmark": "ale-robotics"}
        got[role] = clients[role].post("/api/v1/submissions/", form, format="multipart").status_code
    assert got == {"anonymous": 401, "owner": 201, "other": 201, "staff": 201}


def test_a_submitter_lists_only_their_own_submissions(world: Any, clients: dict[str, Any]) -> None:
    assert clients["other"].get("/api/v1/submissions/").json()["count"] == 0
    assert clients["owner"].get("/api/v1/submissions/").json()["count"] == 4


def _walk(world: Any, client: Any) -> dict[str, str]:
    """Every GET endpoint and every list's detail links, with bodies."""
    bodies = {path: client.get(path).content.decode() for path, _ in _reads(world)}
    bodies["/api/v1/schema/?format=json"] = client.get("/api/v1/schema/", {"format": "json"}).content.decode()
    for path in ("/api/v1/runs/", "/api/v1/tasks/", "/api/v1/releases/"):
        response = client.get(path)
        if response.status_code == 200:
            for item in response.json()["results"]:
                detail = f"{path}{item['id']}/"
                bodies[detail] = client.get(detail).content.decode()
    return bodies


def test_no_response_ever_contains_a_withheld_value(
    world: Any, clients: dict[str, Any], withheld_values: list[str]
) -> None:
    leaks = []
    for role in ROLES:
        # What a role may legitimately see: the owner their own measurements; staff the draft's
        # anchor and every measurement (leaderboard.disclosure shows staff everything).
        allowed = set()
        if role == "owner":
            allowed.add("0.2950931")
        if role == "staff":
            allowed |= {"0.6619473", "0.2950931"}
        for path, body in _walk(world, clients[role]).items():
            for value in withheld_values:
                if value not in allowed and value in body:
                    leaks.append(f"{role} {path}: {value}")
    assert leaks == []


def test_the_walk_does_see_published_values(world: Any, clients: dict[str, Any]) -> None:
    # Guards the leak test: the same walk finds a value that is allowed out.
    bodies = _walk(world, clients["anonymous"])
    assert any("0.7123456" in body for body in bodies.values())
