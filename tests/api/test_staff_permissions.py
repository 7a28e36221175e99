"""A staff account writes only within the Django permissions it was given (leaderboard.permissions):
each admin API write refuses a staff helper without its permission (403 ``permission_denied``,
nothing written), succeeds once the permission is granted, and succeeds for a superuser.
Reading stays with staff status. docs/security-model.md "Actors"."""

from __future__ import annotations

import base64
import io
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from leaderboard import permissions as perms
from leaderboard.models import OfficialRerun, Release, SigningKey, VerificationEvent
from tests.staff import staff_grant

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo-release"


def _manifest_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(DEMO.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(DEMO).as_posix())
    return buffer.getvalue()


def _key() -> str:
    raw = Ed25519PrivateKey.generate().public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def _signing_key(client: Any, world: Any) -> Any:
    body = {"owner_kind": "evaluator", "owner": "robosuite+robomimic", "public_key": _key()}
    return client.post("/api/v1/admin/signing-keys/", body, format="json")


def _sync(client: Any, world: Any) -> Any:
    upload = SimpleUploadedFile("m.zip", _manifest_zip())
    return client.post("/api/v1/admin/releases/sync/", {"manifest": upload}, format="multipart")


def _race_release(client: Any, world: Any) -> Any:
    return client.post(f"/api/v1/admin/races/{world.race.pk}/release/")


def _level(client: Any, world: Any) -> Any:
    body = {"level": "revoked", "reason": "leaked"}
    return client.post(f"/api/v1/admin/runs/{world.public_run.pk}/level/", body, format="json")


def _state(world: Any) -> tuple[Any, ...]:
    """Everything the writes below could change."""
    world.race.refresh_from_db()
    world.public_run.refresh_from_db()
    return (
        SigningKey.objects.count(),
        Release.objects.count(),
        world.race.status,
        world.public_run.level,
        VerificationEvent.objects.count(),
        OfficialRerun.objects.count(),
    )


# (request, permission it needs, success status)
WRITES: dict[str, tuple[Callable[[Any, Any], Any], str, int]] = {
    "register a signing key": (_signing_key, perms.ADD_SIGNING_KEY, 201),
    "sync a manifest": (_sync, perms.PUBLISH_RELEASE, 200),
    "release a race": (_race_release, perms.CHANGE_RACE, 200),
    "lower a run's level": (_level, perms.CHANGE_RUN, 200),
}


@pytest.fixture
def helper(db: Any) -> Any:
    """A staff account the operator gave no permission (a 'view only' helper)."""
    return get_user_model().objects.create_user("helper", password="pw-helper-12345", is_staff=True)


@pytest.mark.parametrize("write", list(WRITES))
def test_a_staff_account_without_the_permission_is_refused_and_nothing_is_written(
    world: Any, client_for: Any, helper: Any, write: str
) -> None:
    send, perm, _ = WRITES[write]
    before = _state(world)
    response = send(client_for(helper), world)
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    assert perm in response.json()["error"]["message"]
    assert _state(world) == before


def test_a_staff_account_without_the_permission_cannot_record_a_re_run(
    world: Any, client_for: Any, helper: Any
) -> None:
    body = {"results": {"pick-cube": {"measured": 0.5}}}
    response = client_for(helper).post(f"/api/v1/admin/runs/{world.public_run.pk}/reruns/", body, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (403, "permission_denied")
    assert not OfficialRerun.objects.exists()


@pytest.mark.parametrize("write", list(WRITES))
def test_a_staff_account_given_the_permission_succeeds(world: Any, client_for: Any, helper: Any, write: str) -> None:
    send, perm, ok = WRITES[write]
    response = send(client_for(staff_grant(helper, perm)), world)
    assert response.status_code == ok, response.json()


@pytest.mark.parametrize("write", list(WRITES))
def test_another_permission_does_not_stand_in_for_the_one_needed(
    world: Any, client_for: Any, helper: Any, write: str
) -> None:
    send, perm, _ = WRITES[write]
    others = [other for other in perms.STAFF_WRITE_PERMISSIONS if other != perm]
    before = _state(world)
    response = send(client_for(staff_grant(helper, *others)), world)
    assert (response.status_code, response.json()["error"]["code"]) == (403, "permission_denied")
    assert _state(world) == before


@pytest.mark.parametrize("write", list(WRITES))
def test_a_superuser_succeeds(world: Any, client_for: Any, write: str) -> None:
    send, _, ok = WRITES[write]
    root = get_user_model().objects.create_superuser("root", email="", password="pw-root-123456")
    assert send(client_for(root), world).status_code == ok


def test_a_staff_account_without_permissions_still_reads_the_signing_keys(
    world: Any, client_for: Any, helper: Any
) -> None:
    """Reading stays with staff status: only writes need a permission."""
    response = client_for(helper).get("/api/v1/admin/signing-keys/")
    assert response.status_code == 200


def test_a_signed_in_account_that_is_not_staff_is_refused_even_with_the_permission(world: Any, client_for: Any) -> None:
    user = staff_grant(get_user_model().objects.create_user("granted", password="pw-granted-1234"))
    before = _state(world)
    response = _signing_key(client_for(user), world)
    assert (response.status_code, response.json()["error"]["code"]) == (403, "permission_denied")
    assert _state(world) == before
